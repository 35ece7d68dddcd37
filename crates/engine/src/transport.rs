//! The transport boundary: how a worker opens a byte stream to the target and moves bytes over it.
//!
//! The connection driver only needs [`Stream`]: non-blocking reads and writes that say when they would block.
//! Plain TCP is the one transport today; an HTTPS backend would add a `connect` that wraps the TCP socket in TLS
//! and return its own `Stream` type here.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::task::Poll;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::rt::{Rt, TaskId, READABLE, READ_CLOSED, WRITABLE};

/// `SO_TIMESTAMPNS_NEW` / `SCM_TIMESTAMPNS_NEW` (Linux 5.1): receive timestamps as a 64-bit timespec.
const SO_TIMESTAMPNS_NEW: libc::c_int = 64;

/// What a read got.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Read {
    /// Bytes read; 0 is the end of the stream.
    pub len: usize,
    /// When the last of these bytes reached the socket (the kernel's receive timestamp), if known.
    pub arrived: Option<Instant>,
}

/// A connected stream to the target. `Ok(None)`: nothing can be done until the event loop wakes the task.
pub(crate) trait Stream {
    fn try_write(&mut self, rt: &Rt, buf: &[u8]) -> io::Result<Option<usize>>;
    fn try_read(&mut self, rt: &Rt, buf: &mut [u8]) -> io::Result<Option<Read>>;
}

/// Why a connect failed.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// No local port or address was available (`EADDRNOTAVAIL`): ephemeral ports ran out, usually to TIME_WAIT.
    AddressUnavailable,
    TimedOut,
    Other(io::Error),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::AddressUnavailable => f.write_str("no local address or port available (EADDRNOTAVAIL)"),
            ConnectError::TimedOut => f.write_str("connect timed out"),
            ConnectError::Other(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for ConnectError {
    fn from(e: io::Error) -> Self {
        if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
            ConnectError::AddressUnavailable
        } else {
            ConnectError::Other(e)
        }
    }
}

/// A non-blocking TCP connection registered with its task's event loop.
pub(crate) struct TcpConn {
    sock: Socket,
    task: TaskId,
    /// The socket delivers receive timestamps.
    timestamps: bool,
}

/// Counts a connect in progress for as long as it lives.
struct Connecting<'a>(&'a Rt);

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        self.0.connect_ended();
    }
}

/// Opens a TCP connection with `TCP_NODELAY` and receive timestamps, for the task being polled.
pub(crate) async fn connect(rt: &Rt, addr: SocketAddr, timeout: Duration) -> Result<TcpConn, ConnectError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM.nonblocking().cloexec(), Some(Protocol::TCP))?;
    sock.set_tcp_nodelay(true)?;
    let timestamps = enable_timestamps(&sock);
    let task = rt.current();
    match sock.connect(&SockAddr::from(addr)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e.into()),
    }
    rt.register(sock.as_raw_fd(), task)?;
    rt.connect_started();
    let _connecting = Connecting(rt);
    let deadline = Instant::now().checked_add(timeout);
    let mut armed = false;
    poll_fn(|_cx| {
        if rt.readiness(task) & WRITABLE != 0 {
            return Poll::Ready(Ok(()));
        }
        match deadline {
            Some(d) if Instant::now() >= d => Poll::Ready(Err(ConnectError::TimedOut)),
            Some(d) => {
                if !armed {
                    rt.add_timer(d, task);
                    armed = true;
                }
                Poll::Pending
            }
            None => Poll::Pending,
        }
    })
    .await?;
    if let Some(e) = sock.take_error()? {
        return Err(e.into());
    }
    Ok(TcpConn { sock, task, timestamps })
}

fn enable_timestamps(sock: &Socket) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: the option value is a live c_int of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_TIMESTAMPNS_NEW,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

impl Stream for TcpConn {
    fn try_write(&mut self, rt: &Rt, buf: &[u8]) -> io::Result<Option<usize>> {
        if rt.readiness(self.task) & WRITABLE == 0 {
            return Ok(None);
        }
        loop {
            // SAFETY: `buf` is valid for `buf.len()` bytes; MSG_NOSIGNAL keeps a closed peer from raising SIGPIPE.
            let n = unsafe { libc::send(self.sock.as_raw_fd(), buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
            if n >= 0 {
                let n = n as usize;
                if n < buf.len() {
                    // The send buffer is full: the next edge says when it has room again.
                    rt.clear(self.task, WRITABLE);
                }
                return Ok(Some(n));
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if would_block(&e) {
                rt.clear(self.task, WRITABLE);
                return Ok(None);
            }
            return Err(e);
        }
    }

    fn try_read(&mut self, rt: &Rt, buf: &mut [u8]) -> io::Result<Option<Read>> {
        if rt.readiness(self.task) & (READABLE | READ_CLOSED) == 0 {
            return Ok(None);
        }
        loop {
            let (n, arrived) = if self.timestamps { self.recvmsg(rt, buf) } else { self.recv(buf) };
            if n >= 0 {
                let len = n as usize;
                if len < buf.len() && len > 0 {
                    // A short read emptied the receive queue: anything more arrives with a new edge.
                    rt.clear(self.task, READABLE);
                }
                return Ok(Some(Read { len, arrived }));
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if would_block(&e) {
                rt.clear(self.task, READABLE);
                return Ok(None);
            }
            return Err(e);
        }
    }
}

impl TcpConn {
    fn recv(&self, buf: &mut [u8]) -> (isize, Option<Instant>) {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        let n = unsafe { libc::recv(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        (n, None)
    }

    /// A read that also takes the receive timestamp of the last bytes read.
    fn recvmsg(&self, rt: &Rt, buf: &mut [u8]) -> (isize, Option<Instant>) {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        // Room for one cmsghdr with a 16-byte timespec, 8-byte aligned.
        let mut control = [0u64; 8];
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: `msg` points at a live iovec over `buf` and at `control`, both valid for the given lengths.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut msg, 0) };
        if n <= 0 {
            return (n, None);
        }
        let mut arrived = None;
        // SAFETY: the CMSG_* helpers walk the control buffer the kernel filled, within msg_controllen.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS_NEW {
                    let data = libc::CMSG_DATA(c).cast::<[i64; 2]>();
                    let [sec, nsec] = std::ptr::read_unaligned(data);
                    arrived = rt.instant_of(sec, nsec);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        (n, arrived)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::Task;
    use std::io::Write;

    /// A read made long after the bytes arrived still knows when they arrived: the event loop may defer reads
    /// without moving completion times.
    #[test]
    fn reads_carry_the_kernel_arrival_time() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"hello").unwrap();
            tx.send(()).unwrap();
            // Keep the connection open until the client is done.
            let mut buf = [0u8; 1];
            let _ = std::io::Read::read(&mut s, &mut buf);
        });
        let rt = Rt::new(1).unwrap();
        let rt_ref = &rt;
        let result = std::rc::Rc::new(std::cell::Cell::new(None));
        let out = result.clone();
        let task: Task<'_> = Box::pin(async move {
            let mut conn = connect(rt_ref, addr, Duration::from_secs(10)).await.unwrap();
            while rx.try_recv().is_err() {
                rt_ref.sleep(Duration::from_millis(1)).await;
            }
            // The bytes are in the socket: read them 50 ms later.
            rt_ref.sleep(Duration::from_millis(50)).await;
            let mut buf = [0u8; 64];
            let read = poll_fn(|_| match conn.try_read(rt_ref, &mut buf) {
                Ok(Some(r)) => Poll::Ready(r),
                Ok(None) => Poll::Pending,
                Err(e) => panic!("{e}"),
            })
            .await;
            out.set(Some((read, Instant::now())));
        });
        rt.run(vec![task]);
        let (read, now) = result.get().unwrap();
        assert_eq!(read.len, 5);
        let arrived = read.arrived.expect("receive timestamps on loopback");
        assert!(now.duration_since(arrived) >= Duration::from_millis(50), "{:?}", now.duration_since(arrived));
        server.join().unwrap();
    }

    #[test]
    fn connection_refused_is_a_connect_error() {
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let rt = Rt::new(1).unwrap();
        let rt_ref = &rt;
        let got = std::rc::Rc::new(std::cell::RefCell::new(None));
        let out = got.clone();
        rt.run(vec![Box::pin(async move {
            *out.borrow_mut() = Some(connect(rt_ref, addr, Duration::from_secs(10)).await.map(|_| ()));
        })]);
        let got = got.borrow_mut().take().unwrap();
        assert!(
            matches!(got, Err(ConnectError::Other(ref e)) if e.kind() == io::ErrorKind::ConnectionRefused),
            "{got:?}"
        );
    }
}
