//! The transport boundary: how a worker opens a byte stream to the target and moves bytes over it.
//!
//! The connection driver only needs [`Stream`]: non-blocking reads and writes that say when they would block.
//! Plain TCP ([`TcpConn`]) and TLS over it (`TlsConn` in `tls.rs`, opened by its `handshake` on a connected
//! `TcpConn`) are the two implementations. The worker drives a connection through a generic function,
//! so each transport gets its own monomorphized copy of the one engine loop: the plain path pays nothing for TLS
//! (no boxed stream, no branch per read).

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::task::Poll;
use std::time::{Duration, Instant};

use loadgate_measure::TlsErrorKind;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::rt::{Deadline, Rt, TaskId, READABLE, READ_CLOSED, WRITABLE};

/// `SO_TIMESTAMPNS_NEW` / `SCM_TIMESTAMPNS_NEW` (Linux 5.1): receive timestamps as a 64-bit timespec.
const SO_TIMESTAMPNS_NEW: libc::c_int = 64;

/// The receive timestamps a socket delivers, by the option that turned them on (the first one the kernel
/// accepts, best first). The control message's type is the option's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamps {
    /// `SO_TIMESTAMPNS_NEW`: `{ i64 sec, i64 nsec }`.
    Ns64,
    /// `SO_TIMESTAMPNS` (older kernels, emulated kernels): a `struct timespec`.
    Ns,
    /// `SO_TIMESTAMP`: a `struct timeval`, microseconds.
    Us,
}

impl Stamps {
    const BEST_FIRST: [Stamps; 3] = [Stamps::Ns64, Stamps::Ns, Stamps::Us];

    fn option(self) -> libc::c_int {
        match self {
            Stamps::Ns64 => SO_TIMESTAMPNS_NEW,
            Stamps::Ns => libc::SO_TIMESTAMPNS,
            Stamps::Us => libc::SO_TIMESTAMP,
        }
    }
}

/// What a read got.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Read {
    /// Bytes read; 0 is the end of the stream.
    pub len: usize,
    /// When the last of these bytes reached the socket (the kernel's receive timestamp), if known.
    pub arrived: Option<Instant>,
}

/// A TLS failure, classified, with the words a report shows: what broke a TLS stream ([`Stream::take_tls_failure`])
/// or its handshake. The TLS module makes them; it is here so that the boundary names no transport above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsFailure {
    pub kind: TlsErrorKind,
    pub message: String,
}

/// A connected stream to the target. `Ok(None)`: nothing can be done until the event loop wakes the task.
pub(crate) trait Stream {
    fn try_write(&mut self, rt: &Rt, buf: &[u8]) -> io::Result<Option<usize>>;
    fn try_read(&mut self, rt: &Rt, buf: &mut [u8]) -> io::Result<Option<Read>>;
    /// Writes what the stream itself buffered (TLS records a full socket did not take); nothing for plain TCP.
    #[inline(always)]
    fn try_flush(&mut self, _rt: &Rt) -> io::Result<()> {
        Ok(())
    }
    /// The TLS error that broke the stream (after a failed read or write), once.
    fn take_tls_failure(&mut self) -> Option<TlsFailure> {
        None
    }
    /// Whether [`Stream::set_read_low_water`] holds readiness back (plain TCP with receive timestamps: a read it
    /// delays still knows when its bytes arrived).
    #[inline(always)]
    fn holds_reads(&self) -> bool {
        false
    }
    /// Report the stream readable only once `bytes` are waiting (`SO_RCVLOWAT`; 1 is the kernel's default), or at
    /// the end of the stream or an error. Nothing where [`Stream::holds_reads`] is false.
    fn set_read_low_water(&mut self, _bytes: usize) -> io::Result<()> {
        Ok(())
    }
}

/// Why a connect failed.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// No local port or address was available (`EADDRNOTAVAIL`): ephemeral ports ran out, usually to TIME_WAIT.
    AddressUnavailable,
    TimedOut,
    Other(io::Error),
    /// The TLS handshake failed (classified in the TLS error counts): what happened and what to do.
    Tls(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::AddressUnavailable => f.write_str("no local address or port available (EADDRNOTAVAIL)"),
            ConnectError::TimedOut => f.write_str("connect timed out"),
            ConnectError::Other(e) => write!(f, "{e}"),
            ConnectError::Tls(message) => f.write_str(message),
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
    /// The receive timestamps the socket was asked for (`None`: none could be turned on).
    stamps: Option<Stamps>,
}

/// Counts a connect in progress for as long as it lives.
pub(crate) struct Connecting<'a>(pub(crate) &'a Rt);

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        self.0.connect_ended();
    }
}

/// Opens a TCP connection with `TCP_NODELAY` and receive timestamps (where the kernel has them), for the task
/// being polled.
pub(crate) async fn connect(rt: &Rt, addr: SocketAddr, timeout: Duration) -> Result<TcpConn, ConnectError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM.nonblocking().cloexec(), Some(Protocol::TCP))?;
    sock.set_tcp_nodelay(true)?;
    let stamps = if rt.wants_timestamps() { enable_timestamps(&sock) } else { None };
    let task = rt.current();
    match sock.connect(&SockAddr::from(addr)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e.into()),
    }
    rt.register(sock.as_raw_fd(), task)?;
    rt.connect_started();
    let _connecting = Connecting(rt);
    let mut deadline = Deadline::after(timeout);
    poll_fn(|_cx| {
        if rt.readiness(task) & WRITABLE != 0 {
            Poll::Ready(Ok(()))
        } else if deadline.passed(rt, task) {
            Poll::Ready(Err(ConnectError::TimedOut))
        } else {
            Poll::Pending
        }
    })
    .await?;
    if let Some(e) = sock.take_error()? {
        return Err(e.into());
    }
    Ok(TcpConn { sock, task, stamps })
}

/// Turns on the best receive timestamps the kernel accepts.
fn enable_timestamps(sock: &Socket) -> Option<Stamps> {
    let on: libc::c_int = 1;
    Stamps::BEST_FIRST.into_iter().find(|s| {
        // SAFETY: the option value is a live c_int of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                s.option(),
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        rc == 0
    })
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

impl Stream for TcpConn {
    #[inline(always)]
    fn holds_reads(&self) -> bool {
        self.stamps.is_some()
    }

    fn set_read_low_water(&mut self, bytes: usize) -> io::Result<()> {
        let value = libc::c_int::try_from(bytes.max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: the option value is a live c_int of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                self.sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn try_write(&mut self, rt: &Rt, buf: &[u8]) -> io::Result<Option<usize>> {
        if rt.readiness(self.task) & WRITABLE == 0 {
            return Ok(None);
        }
        let fd = self.sock.as_raw_fd();
        // SAFETY: `buf` is valid for `buf.len()` bytes; MSG_NOSIGNAL keeps a closed peer from raising SIGPIPE.
        self.sent(rt, buf.len(), || unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) })
    }

    fn try_read(&mut self, rt: &Rt, buf: &mut [u8]) -> io::Result<Option<Read>> {
        if rt.readiness(self.task) & (READABLE | READ_CLOSED) == 0 {
            return Ok(None);
        }
        loop {
            let (n, arrived) = match self.stamps {
                Some(stamps) => self.recvmsg(rt, stamps, buf),
                None => self.recv(buf),
            };
            if n >= 0 {
                let len = n as usize;
                if len > 0 {
                    rt.note_read(arrived.is_some());
                }
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
    /// Writes several buffers in one `sendmsg` (TLS records queued together).
    pub(crate) fn try_write_vectored(&mut self, rt: &Rt, bufs: &[io::IoSlice<'_>]) -> io::Result<Option<usize>> {
        if rt.readiness(self.task) & WRITABLE == 0 {
            return Ok(None);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with iovec on Unix.
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = bufs.len() as _;
        let fd = self.sock.as_raw_fd();
        // SAFETY: `msg` points at the caller's live slices, read-only for the kernel; MSG_NOSIGNAL keeps a closed
        // peer from raising SIGPIPE.
        self.sent(rt, total, || unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) })
    }

    /// Runs a send system call (retried when interrupted) of `want` bytes and reads its result: the bytes
    /// written, `None` when the socket cannot take any now. A short or refused write clears the writable flag:
    /// the send buffer is full, and the next edge says when it has room again.
    #[inline]
    fn sent(&mut self, rt: &Rt, want: usize, mut send: impl FnMut() -> isize) -> io::Result<Option<usize>> {
        loop {
            let n = send();
            if n >= 0 {
                let n = n as usize;
                if n < want {
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

    fn recv(&self, buf: &mut [u8]) -> (isize, Option<Instant>) {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        let n = unsafe { libc::recv(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        (n, None)
    }

    /// A read that also takes the receive timestamp of the last bytes read.
    #[cfg_attr(
        target_pointer_width = "64",
        expect(clippy::useless_conversion, reason = "time_t and c_long are i64 on 64-bit targets only")
    )]
    fn recvmsg(&self, rt: &Rt, stamps: Stamps, buf: &mut [u8]) -> (isize, Option<Instant>) {
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
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == stamps.option() {
                    let data = libc::CMSG_DATA(c);
                    let (sec, nsec) = match stamps {
                        Stamps::Ns64 => {
                            let [sec, nsec] = std::ptr::read_unaligned(data.cast::<[i64; 2]>());
                            (sec, nsec)
                        }
                        Stamps::Ns => {
                            let t = std::ptr::read_unaligned(data.cast::<libc::timespec>());
                            (i64::from(t.tv_sec), i64::from(t.tv_nsec))
                        }
                        Stamps::Us => {
                            let t = std::ptr::read_unaligned(data.cast::<libc::timeval>());
                            (i64::from(t.tv_sec), i64::from(t.tv_usec) * 1000)
                        }
                    };
                    // A zero stamp is a packet queued before timestamps were on: no timestamp.
                    if sec != 0 || nsec != 0 {
                        arrived = rt.instant_of(sec, nsec);
                    }
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

    /// Connects to a server that writes "hello", reads the bytes 50 ms after they arrived, and returns the read
    /// and the moment it was made.
    fn late_read(rt: &Rt) -> (Read, Instant) {
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
        let result = std::rc::Rc::new(std::cell::Cell::new(None));
        let out = result.clone();
        let task: Task<'_> = Box::pin(async move {
            let mut conn = connect(rt, addr, Duration::from_secs(10)).await.unwrap();
            while rx.try_recv().is_err() {
                rt.sleep(Duration::from_millis(1)).await;
            }
            // The bytes are in the socket: read them 50 ms later.
            rt.sleep(Duration::from_millis(50)).await;
            let mut buf = [0u8; 64];
            let read = poll_fn(|_| match conn.try_read(rt, &mut buf) {
                Ok(Some(r)) => Poll::Ready(r),
                Ok(None) => Poll::Pending,
                Err(e) => panic!("{e}"),
            })
            .await;
            out.set(Some((read, Instant::now())));
        });
        rt.run(vec![task]);
        server.join().unwrap();
        result.get().unwrap()
    }

    /// A read made long after the bytes arrived still knows when they arrived, so the event loop may defer
    /// reads without moving completion times. A kernel (or sandbox) without receive timestamps gives none, and
    /// then the loop must never defer.
    #[test]
    fn reads_carry_the_kernel_arrival_time_or_forbid_deferral() {
        let rt = Rt::new(1).unwrap();
        let (read, now) = late_read(&rt);
        assert_eq!(read.len, 5);
        rt.set_defer_io(true);
        match read.arrived {
            Some(arrived) => {
                let late = now.duration_since(arrived);
                assert!(late >= Duration::from_millis(50), "{late:?}");
                assert!(rt.defers_io());
            }
            None => assert!(!rt.defers_io(), "reads without timestamps may not be deferred"),
        }
    }

    #[test]
    fn without_timestamps_reads_carry_none_and_io_is_never_deferred() {
        let rt = Rt::new(1).unwrap();
        rt.without_timestamps();
        let (read, _) = late_read(&rt);
        assert_eq!(read.len, 5);
        assert!(read.arrived.is_none());
        rt.set_defer_io(true);
        assert!(!rt.defers_io());
    }

    /// A server that writes `parts` (each its own segment, `gap` apart) once the client sends a byte, and keeps
    /// the connection open until the client is done.
    fn spaced_writer(parts: Vec<Vec<u8>>, gap: Duration) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut go = [0u8; 1];
            std::io::Read::read_exact(&mut s, &mut go).unwrap();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(gap);
                }
                s.write_all(p).unwrap();
            }
            let mut buf = [0u8; 1];
            let _ = std::io::Read::read(&mut s, &mut buf);
        });
        (addr, server)
    }

    /// With a low-water mark of 30 bytes, 10 bytes leave the socket unreadable to epoll; 30 make it readable, and
    /// the one read then takes all 30 with the arrival of the last of them.
    #[test]
    fn a_low_water_mark_holds_readiness_back_until_it_is_reached() {
        let gap = Duration::from_millis(100);
        let (addr, server) = spaced_writer(vec![b"0123456789".to_vec(), [b'x'; 20].to_vec()], gap);
        let rt = Rt::new(1).unwrap();
        let seen = std::rc::Rc::new(std::cell::Cell::new(None));
        let out = seen.clone();
        let rt_ref = &rt;
        rt.run(vec![Box::pin(async move {
            let mut conn = connect(rt_ref, addr, Duration::from_secs(10)).await.unwrap();
            if !conn.holds_reads() {
                return;
            }
            conn.set_read_low_water(30).unwrap();
            let sent = poll_fn(|_| match conn.try_write(rt_ref, b"g") {
                Ok(Some(1)) => Poll::Ready(Instant::now()),
                Ok(_) => Poll::Pending,
                Err(e) => panic!("{e}"),
            })
            .await;
            // Wait for epoll to say the socket is readable, then read it.
            let task = rt_ref.current();
            poll_fn(|_| if rt_ref.readiness(task) & READABLE != 0 { Poll::Ready(()) } else { Poll::Pending }).await;
            let mut buf = [0u8; 64];
            let read = conn.try_read(rt_ref, &mut buf).unwrap().unwrap();
            out.set(Some((read, sent)));
        })]);
        server.join().unwrap();
        let Some((read, sent)) = seen.get() else {
            eprintln!("skipped: this kernel gives no receive timestamps");
            return;
        };
        assert_eq!(read.len, 30, "readable only once the mark was reached");
        // The second write came 100 ms or more after the first, which came after the client's byte.
        let arrived = read.arrived.expect("stamped");
        assert!(arrived.duration_since(sent) >= gap - Duration::from_millis(1), "{:?}", arrived.duration_since(sent));
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
