//! Receiving through io_uring: one multishot `recvmsg` per connection instead of an epoll wake-up and a
//! `recvmsg` system call per read (issue 17).
//!
//! Where it is used (plain-TCP closed keep-alive loads, see `worker::uses_ring`), the event loop waits in
//! `io_uring_enter` instead of `epoll_pwait2`. Each connection has one multishot `IORING_OP_RECVMSG` armed
//! from its connect to its close: the kernel receives into buffers the worker provides (a registered buffer
//! ring) while the thread waits, and one `io_uring_enter` returns the reads of every connection that got
//! bytes. A read keeps its own kernel receive timestamp (the `SO_TIMESTAMPNS` control message lands in the
//! buffer beside the bytes), so completion times are what the epoll path gives; a connection's reads are
//! handed to its slot one at a time, in order, through the same `Stream::try_read` as before. The ring is
//! created with `DEFER_TASKRUN`: receives run only inside the thread's own `io_uring_enter`, never by
//! interrupting it.
//!
//! Epoll stays for what is not a read: a connect's completion and a full send buffer's room (`EPOLLOUT`,
//! edge-triggered). The epoll descriptor itself is polled through the ring, so the thread still waits in one
//! place. Sends stay plain `send` calls (one per batch of requests).
//!
//! The ring is tried once per worker and checked with a socket pair before any connection uses it; a kernel
//! or sandbox without io_uring (or without multishot receives, Linux 6.0) gets the epoll loop.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::rt::{Rt, TaskId, READABLE};
use crate::transport::{stamp_of, Read, Stamps};

/// Submission queue entries (completions get twice as many).
const ENTRIES: u32 = 1024;
/// Provided buffers (a power of two) and their size: a read takes one buffer, which goes back to the kernel
/// as soon as its slot has parsed it.
const BUFS: u16 = 1024;
const BUF_LEN: usize = 4096;
/// The buffer group of the provided buffers.
const BGID: u16 = 0;
/// Room for one control message carrying a 16-byte timespec (`CMSG_SPACE(16)`).
const CONTROL_LEN: usize = 32;
/// Where a buffer's payload starts: `struct io_uring_recvmsg_out` (16 bytes), no address, the control room.
const PAYLOAD_AT: usize = 16 + CONTROL_LEN;

/// What a completion is about, in the top bits of its user data: a connection's receive (with the
/// connection's generation and task), the epoll descriptor's poll, or a cancellation.
const KIND_RECV: u64 = 0;
const KIND_EPOLL: u64 = 1 << 62;
const KIND_CANCEL: u64 = 2 << 62;
const KIND_MASK: u64 = 3 << 62;
const GEN_MASK: u32 = (1 << 30) - 1;

fn recv_data(generation: u32, task: TaskId) -> u64 {
    KIND_RECV | (u64::from(generation & GEN_MASK) << 32) | u64::from(task)
}

/// One read as the kernel made it, waiting for its slot.
#[derive(Debug)]
enum Chunk {
    /// Bytes in provided buffer `bid`, from `off`, with the kernel's receive timestamp (seconds, nanoseconds).
    Data { bid: u16, off: u16, len: u16, stamp: Option<(i64, i64)> },
    /// The peer closed its side.
    End,
    /// The receive failed with this errno.
    Failed(i32),
}

#[derive(Debug, Default)]
struct Conn {
    fd: RawFd,
    /// Bumped at every connect of the task: completions of an earlier connection are recognized and dropped.
    generation: u32,
    open: bool,
    /// A multishot receive is (or is about to be) armed.
    armed: bool,
    stamps: Option<Stamps>,
    rx: VecDeque<Chunk>,
}

/// A worker's io_uring: the ring, its provided buffers and per task the reads waiting for the slot.
pub(crate) struct Ring {
    ring: IoUring,
    /// The buffer ring shared with the kernel: `BUFS` entries in a page of their own (mmap).
    entries: *mut types::BufRingEntry,
    /// The next free entry of the buffer ring (the kernel consumes from its head).
    tail: u16,
    /// The provided buffers, `BUFS` of `BUF_LEN` bytes (8-byte aligned: control messages are read in place).
    data: Box<[u64]>,
    /// The message header every multishot receive was submitted with (only its lengths are read).
    msg: Box<libc::msghdr>,
    conns: Box<[Conn]>,
    /// Connections whose receive ended for want of buffers: armed again at the next wait.
    rearm: Vec<(TaskId, u32)>,
    epfd: RawFd,
    epoll_armed: bool,
    cqes: Vec<(u64, i32, u32)>,
}

impl Ring {
    /// A ring for `tasks` tasks whose epoll descriptor is `epfd`, or `None` where the kernel cannot give one
    /// with everything this path needs (checked on a socket pair).
    pub(crate) fn new(tasks: usize, epfd: RawFd) -> Option<Ring> {
        let ring =
            IoUring::builder().setup_single_issuer().setup_defer_taskrun().setup_submit_all().build(ENTRIES).ok()?;
        if !ring.params().is_feature_ext_arg() || !ring.params().is_feature_nodrop() {
            return None;
        }
        let bytes = usize::from(BUFS) * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: an anonymous private mapping, no pointers passed in.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let mut msg: Box<libc::msghdr> = Box::new(
            // SAFETY: msghdr is plain data; all-zero is a valid empty header.
            unsafe { std::mem::zeroed() },
        );
        msg.msg_controllen = CONTROL_LEN as _;
        let mut r = Ring {
            ring,
            entries: map.cast(),
            tail: 0,
            data: vec![0u64; usize::from(BUFS) * BUF_LEN / 8].into_boxed_slice(),
            msg,
            conns: (0..tasks).map(|_| Conn::default()).collect(),
            rearm: Vec::new(),
            epfd,
            epoll_armed: false,
            cqes: Vec::with_capacity(ENTRIES as usize * 2),
        };
        // SAFETY: `entries` is a page-aligned mapping of `BUFS` entries that lives as long as the ring (it is
        // unmapped in Drop, after the group is unregistered).
        unsafe { r.ring.submitter().register_buf_ring_with_flags(map as u64, BUFS, BGID, 0) }.ok()?;
        for bid in 0..BUFS {
            r.give_back(bid);
        }
        r.works().then_some(r)
    }

    /// Receives one byte sent over a socket pair through a multishot receive, with its completion saying more
    /// will come: what a kernel without multishot `recvmsg` (before 6.0) or a sandbox cannot do.
    fn works(&mut self) -> bool {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0
        {
            return false;
        }
        // SAFETY: both descriptors were just created and are owned here.
        let (a, b) = unsafe {
            (
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[0]),
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[1]),
            )
        };
        let task = 0;
        self.open(a.as_raw_fd(), task, None);
        // SAFETY: writes one byte from a live buffer.
        unsafe { libc::write(b.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        let mut woken = Vec::new();
        self.wait(Some(Duration::from_millis(500)), &mut woken);
        let got = matches!(self.conns[0].rx.front(), Some(Chunk::Data { len: 1, .. })) && self.conns[0].armed;
        self.close(task);
        // The cancellation's completion.
        self.wait(Some(Duration::ZERO), &mut woken);
        got
    }

    /// Starts receiving on `fd`, a connected socket of task `task` with receive timestamps `stamps`.
    pub(crate) fn open(&mut self, fd: RawFd, task: TaskId, stamps: Option<Stamps>) {
        let Some(conn) = self.conns.get_mut(task as usize) else { return };
        conn.generation = conn.generation.wrapping_add(1) & GEN_MASK;
        conn.fd = fd;
        conn.open = true;
        conn.stamps = stamps;
        let stale: Vec<Chunk> = conn.rx.drain(..).collect();
        self.recycle_all(stale);
        self.arm(task);
    }

    /// Stops receiving for task `task` before its socket is closed: the receive is cancelled, and submitted
    /// now, so nothing in the submission queue names the descriptor once it is closed (and maybe reused).
    pub(crate) fn close(&mut self, task: TaskId) {
        let Some(conn) = self.conns.get_mut(task as usize) else { return };
        if !conn.open {
            return;
        }
        conn.open = false;
        let armed = std::mem::take(&mut conn.armed);
        let target = recv_data(conn.generation, task);
        let stale: Vec<Chunk> = conn.rx.drain(..).collect();
        self.recycle_all(stale);
        if armed {
            self.push(&opcode::AsyncCancel::new(target).build().user_data(KIND_CANCEL));
        }
        let _ = self.ring.submit();
    }

    fn arm(&mut self, task: TaskId) {
        let Some(conn) = self.conns.get_mut(task as usize) else { return };
        conn.armed = true;
        let entry = opcode::RecvMsgMulti::new(types::Fd(conn.fd), &*self.msg, BGID)
            .build()
            .user_data(recv_data(conn.generation, task));
        self.push(&entry);
    }

    fn push(&mut self, entry: &squeue::Entry) {
        loop {
            // SAFETY: every entry pushed points at memory the ring outlives (`self.msg`) or at nothing.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                return;
            }
            if self.ring.submit().is_err() {
                return;
            }
        }
    }

    /// Submits what is queued and waits up to `timeout` (`None`: no limit) for completions, which run the
    /// receives; appends the tasks that got reads to `woken` and returns whether epoll has events.
    pub(crate) fn wait(&mut self, timeout: Option<Duration>, woken: &mut Vec<TaskId>) -> bool {
        for (task, generation) in std::mem::take(&mut self.rearm) {
            if self.conns.get(task as usize).is_some_and(|c| c.open && !c.armed && c.generation == generation) {
                self.arm(task);
            }
        }
        if !self.epoll_armed {
            self.epoll_armed = true;
            let poll = opcode::PollAdd::new(types::Fd(self.epfd), libc::POLLIN as u32).multi(true);
            self.push(&poll.build().user_data(KIND_EPOLL));
        }
        let ts = timeout.map(types::Timespec::from);
        let args = types::SubmitArgs::new();
        let args = match &ts {
            Some(ts) => args.timespec(ts),
            None => args,
        };
        // ETIME (the timeout), EINTR and EBUSY (completions to take first) all mean: look at what is there.
        let _ = self.ring.submitter().submit_with_args(1, &args);
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.extend(self.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));

        let mut epoll = false;
        for &(data, res, flags) in &cqes {
            match data & KIND_MASK {
                KIND_RECV => self.received(data, res, flags, woken),
                KIND_EPOLL => {
                    epoll = true;
                    if !cqueue::more(flags) {
                        self.epoll_armed = false;
                    }
                }
                _ => {}
            }
        }
        cqes.clear();
        self.cqes = cqes;
        epoll
    }

    fn received(&mut self, data: u64, res: i32, flags: u32, woken: &mut Vec<TaskId>) {
        let task = data as u32;
        let generation = (data >> 32) as u32 & GEN_MASK;
        let bid = cqueue::buffer_select(flags);
        let Some(conn) = self.conns.get_mut(task as usize).filter(|c| c.open && c.generation == generation) else {
            // A connection closed since: its bytes go nowhere.
            if let Some(bid) = bid {
                self.give_back(bid);
            }
            return;
        };
        let more = cqueue::more(flags);
        if !more {
            conn.armed = false;
        }
        if res < 0 {
            if res == -libc::ENOBUFS {
                self.rearm.push((task, generation));
            } else if res != -libc::ECANCELED {
                conn.rx.push_back(Chunk::Failed(-res));
                woken.push(task);
            }
            return;
        }
        let Some(bid) = bid else { return };
        let start = usize::from(bid) * BUF_LEN;
        let buf = &bytes(&self.data)[start..start + BUF_LEN];
        let word = |at: usize| u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        let (control, payload) = (word(4) as usize, word(8) as usize);
        if payload == 0 {
            conn.rx.push_back(Chunk::End);
            woken.push(task);
            self.give_back(bid);
            return;
        }
        let stamp = conn.stamps.and_then(|stamps| {
            // SAFETY: msghdr is plain data; all-zero is a valid empty header.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_control = buf[16..].as_ptr() as *mut libc::c_void;
            msg.msg_controllen = control.min(CONTROL_LEN) as _;
            stamp_of(&msg, stamps)
        });
        let len = payload.min(BUF_LEN - PAYLOAD_AT) as u16;
        conn.rx.push_back(Chunk::Data { bid, off: PAYLOAD_AT as u16, len, stamp });
        woken.push(task);
        if !more {
            self.rearm.push((task, generation));
        }
    }

    /// The next read of task `task`'s connection: the oldest receive not yet handed over (`None`: nothing
    /// came), with its kernel timestamp.
    pub(crate) fn read(&mut self, rt: &Rt, task: TaskId, buf: &mut [u8]) -> io::Result<Option<Read>> {
        let Some(conn) = self.conns.get_mut(task as usize) else { return Ok(None) };
        let got = match conn.rx.front_mut() {
            None => None,
            Some(Chunk::End) => Some(Read { len: 0, arrived: None }),
            Some(&mut Chunk::Failed(errno)) => return Err(io::Error::from_raw_os_error(errno)),
            Some(Chunk::Data { bid, off, len, stamp }) => {
                let (bid, stamp) = (*bid, *stamp);
                let n = usize::from(*len).min(buf.len());
                let at = usize::from(bid) * BUF_LEN + usize::from(*off);
                buf[..n].copy_from_slice(&bytes(&self.data)[at..at + n]);
                let arrived = stamp.and_then(|(sec, nsec)| rt.instant_of(sec, nsec));
                rt.note_read(arrived.is_some());
                if n < usize::from(*len) {
                    *off += n as u16;
                    *len -= n as u16;
                } else {
                    conn.rx.pop_front();
                    self.give_back(bid);
                }
                Some(Read { len: n, arrived })
            }
        };
        if self.conns[task as usize].rx.is_empty() {
            rt.clear(task, READABLE);
        }
        Ok(got)
    }

    fn recycle_all(&mut self, chunks: Vec<Chunk>) {
        for c in chunks {
            if let Chunk::Data { bid, .. } = c {
                self.give_back(bid);
            }
        }
    }

    /// Hands buffer `bid` back to the kernel.
    fn give_back(&mut self, bid: u16) {
        let addr = self.data.as_ptr() as u64 + u64::from(bid) * BUF_LEN as u64;
        // SAFETY: `entries` maps `BUFS` entries and the index is masked into them; the tail field overlays the
        // first entry's reserved field, which the kernel reads (and this side writes) atomically.
        unsafe {
            let e = &mut *self.entries.add(usize::from(self.tail & (BUFS - 1)));
            e.set_addr(addr);
            e.set_len(BUF_LEN as u32);
            e.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
            let tail = types::BufRingEntry::tail(self.entries).cast_mut();
            (*tail.cast::<AtomicU16>()).store(self.tail, Ordering::Release);
        }
    }
}

/// The provided buffers as bytes.
fn bytes(data: &[u64]) -> &[u8] {
    // SAFETY: any initialized u64 memory is valid as bytes, with the same lifetime and 8 times the length.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // No receive picks a buffer from here on; the ring itself is closed with its field.
        let _ = self.ring.submitter().unregister_buf_ring(BGID);
        let bytes = usize::from(BUFS) * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: `entries` is the mapping made in `new`, of `bytes` bytes, no longer used.
        unsafe { libc::munmap(self.entries.cast(), bytes) };
    }
}

/// Whether the ring is wanted: `LOADGATE_IO=epoll` keeps every worker on epoll (for comparisons, or a kernel
/// whose io_uring misbehaves).
pub(crate) fn allowed() -> bool {
    std::env::var_os("LOADGATE_IO").is_none_or(|v| v != "epoll")
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::future::poll_fn;
    use std::io::{Read as _, Write as _};
    use std::net::{SocketAddr, TcpListener};
    use std::rc::Rc;
    use std::task::Poll;
    use std::time::Duration;

    use crate::rt::{Rt, Task};
    use crate::transport::{connect, Read, Stream, TcpConn};

    /// An event loop receiving through the ring, or `None` (with a note) where this kernel has none.
    fn ring_rt(tasks: usize) -> Option<Rt> {
        let mut rt = Rt::new(tasks).unwrap();
        if rt.use_ring() {
            Some(rt)
        } else {
            eprintln!("no io_uring with multishot receives here: the epoll path is the one tested");
            None
        }
    }

    /// Reads from `conn` until the end of the stream; returns the bytes and every read.
    async fn read_to_end(rt: &Rt, conn: &mut TcpConn) -> (Vec<u8>, Vec<Read>) {
        let (mut bytes, mut reads) = (Vec::new(), Vec::new());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = poll_fn(|_| match conn.try_read(rt, &mut buf) {
                Ok(Some(r)) => Poll::Ready(r),
                Ok(None) => Poll::Pending,
                Err(e) => panic!("{e}"),
            })
            .await;
            if read.len == 0 {
                return (bytes, reads);
            }
            bytes.extend_from_slice(&buf[..read.len]);
            reads.push(read);
        }
    }

    fn server(script: impl FnOnce(std::net::TcpStream) + Send + 'static) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            script(s);
        });
        (addr, handle)
    }

    /// Bytes larger than a provided buffer, written in several pieces, come out whole and in order, every read
    /// with the kernel's receive timestamp, and then the end of the stream.
    #[test]
    fn reads_through_the_ring_come_in_order_with_timestamps_then_the_end() {
        let Some(rt) = ring_rt(2) else { return };
        let body: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let sent = body.clone();
        let (addr, handle) = server(move |mut s| {
            s.write_all(b"hello").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            s.write_all(&sent).unwrap();
        });
        let got = Rc::new(RefCell::new(None));
        let out = got.clone();
        let rt_ref = &rt;
        let task: Task<'_> = Box::pin(async move {
            let mut conn = connect(rt_ref, addr, Duration::from_secs(10)).await.unwrap();
            *out.borrow_mut() = Some(read_to_end(rt_ref, &mut conn).await);
        });
        rt.run(vec![task]);
        handle.join().unwrap();
        let (bytes, reads) = got.borrow_mut().take().unwrap();
        assert_eq!(&bytes[..5], b"hello");
        assert_eq!(&bytes[5..], &body[..]);
        assert!(reads.len() >= 2, "{} reads", reads.len());
        assert!(reads.iter().all(|r| r.arrived.is_some()), "every read carries its receive timestamp");
    }

    /// A connection dropped by its slot has its receive cancelled and its socket closed (the server reads the
    /// end), and the next connection of the same task gets only its own bytes.
    #[test]
    fn a_dropped_connection_closes_and_the_next_one_gets_only_its_own_bytes() {
        let Some(rt) = ring_rt(2) else { return };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut first, _) = listener.accept().unwrap();
            first.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut rest = Vec::new();
            // The client closes: the read ends (rather than timing out).
            let ended = first.read_to_end(&mut rest).is_ok();
            let (mut second, _) = listener.accept().unwrap();
            second.write_all(b"second").unwrap();
            // Bytes for the first connection, written after it closed, are nobody's.
            let _ = first.write_all(b"stale");
            ended
        });
        let got = Rc::new(RefCell::new(None));
        let out = got.clone();
        let rt_ref = &rt;
        let task: Task<'_> = Box::pin(async move {
            let conn = connect(rt_ref, addr, Duration::from_secs(10)).await.unwrap();
            drop(conn);
            let mut conn = connect(rt_ref, addr, Duration::from_secs(10)).await.unwrap();
            let mut buf = [0u8; 64];
            let read = poll_fn(|_| match conn.try_read(rt_ref, &mut buf) {
                Ok(Some(r)) => Poll::Ready(r),
                Ok(None) => Poll::Pending,
                Err(e) => panic!("{e}"),
            })
            .await;
            *out.borrow_mut() = Some(buf[..read.len].to_vec());
        });
        rt.run(vec![task]);
        assert!(handle.join().unwrap(), "the first connection was closed");
        assert_eq!(got.borrow_mut().take().unwrap(), b"second");
    }
}
