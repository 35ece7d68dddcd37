//! The HTTP/2 driver: requests as streams over one connection, on the worker's own loop, generic over the
//! transport (h2c over [`TcpConn`](crate::transport::TcpConn), h2 over TLS).
//!
//! It takes requests from the same source as the HTTP/1.1 loop (`Ctx::acquire`), up to `streams` in flight per
//! connection (capped by the server's `SETTINGS_MAX_CONCURRENT_STREAMS`), turns each into HEADERS (and DATA for
//! a body) with the framing of [`crate::h2`], and records each stream's response through the same
//! [`SlotIo::record`] as HTTP/1.1, at the kernel's receive timestamp of the read that brought its last frame.
//! Flow control: the client announces the largest windows and hands received bytes back in 1 GiB steps; a
//! request body is sent as the server's windows allow, one body at a time. A REFUSED_STREAM and the streams
//! above a GOAWAY's last stream id are sent again (on this connection or the next); other RST_STREAMs fail
//! their request as a `read` error. Everything per request reuses the connection's buffers.

use std::ops::Range;

use super::pace::{Acquired, Ctx, Stats};
use super::shared::{count_failure, End, Failure, InFlight, CODES};
use super::slot::{Driver, SlotIo};
use crate::h2::{self, FrameHeader, Repr, RequestHead};
use crate::transport::Stream;

use std::collections::VecDeque;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A stream in flight.
struct Open {
    id: u32,
    req: InFlight,
    status: u16,
    /// DATA bytes received since the stream's window was last handed back.
    recv: u32,
    /// Phases with checks: what the stream's response is found to be (status and body; HTTP/2 header fields
    /// are not read by checks).
    inspector: Option<Box<crate::check::Inspector>>,
}

/// A request taken from the source whose stream is not open yet; `None`: the phase's static request.
struct Queued {
    req: InFlight,
    bytes: Option<Range<usize>>,
}

/// A request body the server's windows hold back.
struct Blocked {
    id: u32,
    window: i64,
    /// What is left of it, in the static request or in `h1`.
    rest: Range<usize>,
    in_static: bool,
}

/// The static request's header blocks, encoded once per connection.
struct StaticBlocks {
    insert: Vec<u8>,
    literal: Vec<u8>,
    fields: usize,
    table_size: usize,
    body: Range<usize>,
}

/// The phase's static request: its HTTP/1.1 bytes, once.
fn static_request(ctx: &Ctx) -> Option<&[u8]> {
    ctx.cfg.request.as_ref().map(|r| r.slice(0, r.len()))
}

pub(super) struct H2<S> {
    stream: S,
    scheme: &'static [u8],
    started: bool,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Received bytes that do not make a whole frame yet.
    rbuf: Vec<u8>,
    block: Vec<u8>,
    /// A header block being received across CONTINUATION frames: its stream and END_STREAM.
    hstream: u32,
    hend: bool,
    hbuf: Vec<u8>,
    settings_seen: bool,
    max_streams: usize,
    init_window: i64,
    send_window: i64,
    max_frame: usize,
    /// The server's HPACK table size (what the encoder may use).
    table_size: usize,
    /// A table size update to send before the next header block.
    size_update: Option<usize>,
    static_blocks: Option<StaticBlocks>,
    /// The static request's fields are in the server's table (inserted by a block already sent).
    inserted: bool,
    /// Indexing is off for this connection (the table is too small).
    no_index: bool,
    next_id: u32,
    open: Vec<Open>,
    queue: VecDeque<Queued>,
    /// Built requests' HTTP/1.1 bytes, for the queued ones and a blocked body.
    h1: Vec<u8>,
    blocked: Option<Blocked>,
    /// The server's GOAWAY (or the stream ids ran out): no new streams.
    goaway: bool,
    conn_recv: u32,
    timer_at: Instant,
    armed: bool,
    /// A closed load holding its freed streams back (see `refill_batch`): since when, and whether the timer
    /// that ends the hold is armed.
    held_since: Option<Instant>,
    hold_armed: bool,
    /// Inspectors of completed streams, for the next streams (phases with checks).
    #[expect(clippy::vec_box, reason = "moved between streams' boxes and here without copying their buffers")]
    spare: Vec<Box<crate::check::Inspector>>,
}

/// The connection cannot go on: a protocol error (or a header block that cannot be decoded).
struct Broken;

impl<S: Stream> H2<S> {
    pub(super) fn new(stream: S, tls: bool) -> Self {
        H2 {
            stream,
            scheme: if tls { b"https" } else { b"http" },
            started: false,
            wbuf: Vec::with_capacity(16 * 1024),
            wpos: 0,
            rbuf: Vec::new(),
            block: Vec::new(),
            hstream: 0,
            hend: false,
            hbuf: Vec::new(),
            settings_seen: false,
            max_streams: usize::MAX,
            init_window: i64::from(h2::DEFAULT_WINDOW),
            send_window: i64::from(h2::DEFAULT_WINDOW),
            max_frame: h2::DEFAULT_MAX_FRAME,
            table_size: h2::DEFAULT_TABLE_SIZE,
            size_update: None,
            static_blocks: None,
            inserted: false,
            no_index: false,
            next_id: 1,
            open: Vec::new(),
            queue: VecDeque::new(),
            h1: Vec::new(),
            blocked: None,
            goaway: false,
            conn_recv: 0,
            timer_at: Instant::now(),
            armed: false,
            held_since: None,
            hold_armed: false,
            spare: Vec::new(),
        }
    }

    /// The streams the connection may have open at once: the load's `streams`, capped by the server's
    /// `MAX_CONCURRENT_STREAMS`.
    fn cap(&self, ctx: &Ctx) -> usize {
        ctx.cfg.streams.min(self.max_streams)
    }

    /// The connection's first bytes, and the static request's blocks.
    fn start(&mut self, ctx: &Ctx, io: &mut SlotIo, stats: &mut Stats) -> Result<(), Broken> {
        self.started = true;
        stats.c.http2.connections += 1;
        h2::put_preface(&mut self.wbuf);
        if let Some(bytes) = static_request(ctx) {
            let head = RequestHead::parse(bytes, self.scheme).ok_or(Broken)?;
            let mut insert = Vec::new();
            h2::write_fields(&mut insert, &head, Repr::Insert);
            let mut literal = Vec::new();
            h2::write_fields(&mut literal, &head, Repr::Literal);
            self.static_blocks = Some(StaticBlocks {
                insert,
                literal,
                fields: head.fields().len(),
                table_size: head.table_size(),
                body: head.body.clone(),
            });
        }
        self.adopt(ctx, io);
        Ok(())
    }

    /// Takes over what the slot put in flight itself (a keep-alive-off request, a session's step).
    fn adopt(&mut self, ctx: &Ctx, io: &mut SlotIo) {
        while let Some(req) = io.in_flight.pop_front() {
            let bytes = if ctx.cfg.request.is_some() {
                None
            } else {
                let start = self.h1.len();
                self.h1.extend_from_slice(&io.out);
                io.out.clear();
                Some(start..self.h1.len())
            };
            self.queue.push_back(Queued { req, bytes });
        }
        io.unwritten = 0;
        io.write_off = 0;
        io.out.clear();
        io.out_pos = 0;
    }

    /// Opens streams for queued requests while the server allows and no body is held back.
    fn open_streams(&mut self, ctx: &Ctx, now: Instant) -> Result<(), Broken> {
        while self.blocked.is_none() && !self.goaway && self.open.len() < self.cap(ctx) {
            let Some(q) = self.queue.pop_front() else { break };
            let id = self.next_id;
            self.next_id += 2;
            if self.next_id >= h2::MAX_WINDOW - 2 {
                // The stream ids ran out: this connection takes no more.
                self.goaway = true;
            }
            self.block.clear();
            if let Some(size) = self.size_update.take() {
                h2::put_int(&mut self.block, 0x20, 5, size);
            }
            let body = match &q.bytes {
                None => {
                    let sb = self.static_blocks.as_ref().ok_or(Broken)?;
                    if self.inserted {
                        h2::write_indexed(&mut self.block, sb.fields);
                    } else if self.settings_seen
                        && !self.no_index
                        && sb.table_size <= self.table_size.min(h2::DEFAULT_TABLE_SIZE)
                    {
                        self.block.extend_from_slice(&sb.insert);
                        self.inserted = true;
                    } else {
                        self.block.extend_from_slice(&sb.literal);
                    }
                    sb.body.clone()
                }
                Some(r) => {
                    let bytes = self.h1.get(r.clone()).ok_or(Broken)?;
                    let head = RequestHead::parse(bytes, self.scheme).ok_or(Broken)?;
                    h2::write_fields(&mut self.block, &head, Repr::Literal);
                    r.start + head.body.start..r.start + head.body.end
                }
            };
            let end_stream = body.is_empty();
            let mut chunks = self.block.chunks(self.max_frame.max(1)).peekable();
            let mut first = true;
            while let Some(chunk) = chunks.next() {
                let last = chunks.peek().is_none();
                let kind = if first { h2::HEADERS } else { h2::CONTINUATION };
                let flags =
                    if last { h2::END_HEADERS } else { 0 } | if first && end_stream { h2::END_STREAM } else { 0 };
                h2::put_header(&mut self.wbuf, chunk.len(), kind, flags, id);
                self.wbuf.extend_from_slice(chunk);
                first = false;
            }
            let inspector = ctx
                .cfg
                .checks
                .as_ref()
                .filter(|p| p.inspects(q.req.entry))
                .map(|p| self.spare.pop().unwrap_or_else(|| Box::new(p.inspector())));
            self.open.push(Open { id, req: InFlight { sent: now, ..q.req }, status: 0, recv: 0, inspector });
            if !end_stream {
                self.blocked = Some(Blocked { id, window: self.init_window, rest: body, in_static: q.bytes.is_none() });
                self.send_body(ctx);
            }
        }
        if self.queue.is_empty() && self.blocked.is_none() {
            self.h1.clear();
        }
        Ok(())
    }

    /// Sends what the windows allow of the body held back.
    fn send_body(&mut self, ctx: &Ctx) {
        let Some(b) = &mut self.blocked else { return };
        let src: &[u8] = if b.in_static { static_request(ctx).unwrap_or_default() } else { &self.h1 };
        while !b.rest.is_empty() {
            let allowed = self.send_window.min(b.window).min(self.max_frame as i64).min(b.rest.len() as i64);
            if allowed <= 0 {
                return;
            }
            let n = allowed as usize;
            let end = b.rest.start + n;
            let flags = if end == b.rest.end { h2::END_STREAM } else { 0 };
            h2::put_header(&mut self.wbuf, n, h2::DATA, flags, b.id);
            self.wbuf.extend_from_slice(src.get(b.rest.start..end).unwrap_or_default());
            self.send_window -= allowed;
            b.window -= allowed;
            b.rest.start = end;
        }
        self.blocked = None;
    }

    /// Puts a request back to be sent again (it never reached the server's application).
    fn resend(ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>, req: InFlight) {
        stats.c.sent -= 1;
        stats.in_flight -= 1;
        stats.c.http2.resent += 1;
        if let Some(e) = stats.by_entry.get_mut(req.entry as usize) {
            e.sent -= 1;
        }
        match &ctx.open {
            None => {
                if let Some(q) = quota {
                    *q += 1;
                }
            }
            Some(src) => src.borrow_mut().retry.push_front((req.intended, req.entry)),
        }
    }

    /// Every open stream fails with `kind`; queued requests go back to be sent on the next connection.
    fn fail_all(&mut self, ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>, kind: Failure) {
        if let Some(f) = self.stream.take_tls_failure() {
            stats.tls.failed(f);
        }
        let n = self.open.len() as u64;
        if n > 0 || matches!(kind, Failure::Protocol) {
            count_failure(&mut stats.c.errors, &kind, n);
        }
        for o in self.open.drain(..) {
            if let Some(e) = stats.by_entry.get_mut(o.req.entry as usize) {
                count_failure(&mut e.errors, &kind, 1);
            }
        }
        stats.in_flight -= n;
        self.resend_queued(ctx, stats, quota);
    }

    fn resend_queued(&mut self, ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>) {
        while let Some(q) = self.queue.pop_back() {
            Self::resend(ctx, stats, quota, q.req);
        }
        self.blocked = None;
    }

    /// The stream ended: its response is recorded at `arrived`.
    fn complete(&mut self, ctx: &Ctx, io: &mut SlotIo, stats: &mut Stats, at: usize, arrived: Instant) {
        let mut o = self.open.remove(at);
        if self.blocked.as_ref().is_some_and(|b| b.id == o.id) {
            // The server answered before the whole body went: the rest is not needed.
            self.blocked = None;
        }
        let entry = o.req.entry;
        io.record(ctx, stats, o.req, o.status, arrived);
        if let Some(mut inspector) = o.inspector.take() {
            let mut caches = ctx.caches.borrow_mut();
            let caches = caches.as_mut().and_then(|c| c.entry(entry));
            if let (Some(checks), Some(tally), Some(caches)) =
                (ctx.cfg.checks.as_ref().and_then(|p| p.entry(entry)), stats.checks.as_mut(), caches)
            {
                let user = super::inspect::UserSide {
                    vars: io.vars.as_deref_mut(),
                    jar: io.jar.as_deref_mut(),
                    request_path: &io.path,
                };
                super::inspect::judge(&mut inspector, checks, caches, entry, user, tally);
            }
            self.spare.push(inspector);
        }
    }

    /// Shows a stream's inspector its response's status (at its final HEADERS) or body bytes (DATA).
    fn inspect(&mut self, ctx: &Ctx, io: &SlotIo, at: usize, status: Option<u16>, data: &[u8]) {
        let o = &mut self.open[at];
        let (Some(inspector), Some(checks)) =
            (o.inspector.as_deref_mut(), ctx.cfg.checks.as_ref().and_then(|p| p.entry(o.req.entry)))
        else {
            return;
        };
        let mut caches = ctx.caches.borrow_mut();
        let Some(caches) = caches.as_mut().and_then(|c| c.entry(o.req.entry)) else { return };
        let mut seeing = super::inspect::Inspecting { inspector, checks, caches, vars: io.vars.as_deref() };
        match status {
            // HTTP/2 header fields are not read by checks (HPACK-decoding them is left out): the head is the
            // status line alone.
            Some(s) => crate::codec::Inspect::head(&mut seeing, s, format!("HTTP/2 {s}\r\n\r\n").as_bytes()),
            None => crate::codec::Inspect::body(&mut seeing, data),
        }
    }

    /// Handles every whole frame at the start of `data`; returns the bytes used.
    #[expect(clippy::too_many_arguments, reason = "the worker's state, split for the borrow checker")]
    fn frames(
        &mut self,
        ctx: &Ctx,
        io: &mut SlotIo,
        stats: &mut Stats,
        quota: &mut Option<u64>,
        data: &[u8],
        arrived: Instant,
        end: &mut Option<End>,
    ) -> Result<usize, Broken> {
        let mut off = 0;
        while let Some(h) = FrameHeader::parse(&data[off..]) {
            if h.len > h2::DEFAULT_MAX_FRAME {
                // Larger than the SETTINGS_MAX_FRAME_SIZE announced (the default): FRAME_SIZE_ERROR.
                return Err(Broken);
            }
            let start = off + h2::FRAME_HEADER;
            let Some(payload) = data.get(start..start + h.len) else { break };
            off = start + h.len;
            self.frame(ctx, io, stats, quota, h, payload, arrived)?;
            if self.goaway && self.open.is_empty() && self.queue.is_empty() {
                *end = Some(End::Reconnect { server_closed: true });
                return Ok(off);
            }
        }
        Ok(off)
    }

    #[expect(clippy::too_many_arguments, reason = "the worker's state, split for the borrow checker")]
    fn frame(
        &mut self,
        ctx: &Ctx,
        io: &mut SlotIo,
        stats: &mut Stats,
        quota: &mut Option<u64>,
        h: FrameHeader,
        payload: &[u8],
        arrived: Instant,
    ) -> Result<(), Broken> {
        if self.hstream != 0 && h.kind != h2::CONTINUATION {
            return Err(Broken);
        }
        match h.kind {
            h2::DATA => {
                self.conn_recv += h.len as u32;
                if self.conn_recv >= h2::WINDOW_REFILL {
                    h2::put_window_update(&mut self.wbuf, 0, self.conn_recv);
                    self.conn_recv = 0;
                }
                if let Some(at) = self.open.iter().position(|o| o.id == h.stream) {
                    if self.open[at].inspector.is_some() {
                        let mut data = payload;
                        if h.flags & h2::PADDED != 0 {
                            let pad = usize::from(data.first().copied().unwrap_or(0));
                            data = data.get(1..data.len().saturating_sub(pad).max(1)).unwrap_or(&[]);
                        }
                        self.inspect(ctx, io, at, None, data);
                    }
                    if h.flags & h2::END_STREAM != 0 {
                        self.complete(ctx, io, stats, at, arrived);
                    } else {
                        let o = &mut self.open[at];
                        o.recv += h.len as u32;
                        if o.recv >= h2::WINDOW_REFILL {
                            h2::put_window_update(&mut self.wbuf, o.id, o.recv);
                            o.recv = 0;
                        }
                    }
                }
            }
            h2::HEADERS => {
                let mut frag = payload;
                if h.flags & h2::PADDED != 0 {
                    let pad = usize::from(*frag.first().ok_or(Broken)?);
                    frag = frag.get(1..frag.len().checked_sub(pad).ok_or(Broken)?).ok_or(Broken)?;
                }
                if h.flags & h2::PRIORITY_FLAG != 0 {
                    frag = frag.get(5..).ok_or(Broken)?;
                }
                let end_stream = h.flags & h2::END_STREAM != 0;
                if h.flags & h2::END_HEADERS != 0 {
                    self.headers(ctx, io, stats, h.stream, frag, end_stream, arrived)?;
                } else {
                    self.hstream = h.stream;
                    self.hend = end_stream;
                    self.hbuf.clear();
                    self.hbuf.extend_from_slice(frag);
                }
            }
            h2::CONTINUATION => {
                if h.stream != self.hstream || self.hstream == 0 {
                    return Err(Broken);
                }
                self.hbuf.extend_from_slice(payload);
                if h.flags & h2::END_HEADERS != 0 {
                    let block = std::mem::take(&mut self.hbuf);
                    let (stream, end_stream) = (self.hstream, self.hend);
                    self.hstream = 0;
                    let r = self.headers(ctx, io, stats, stream, &block, end_stream, arrived);
                    self.hbuf = block;
                    r?;
                }
            }
            h2::RST_STREAM => {
                let code = u32::from_be_bytes(payload.try_into().map_err(|_| Broken)?);
                let slot = usize::try_from(code).unwrap_or(usize::MAX).min(CODES);
                stats.c.http2.rst_streams[slot] += 1;
                if let Some(at) = self.open.iter().position(|o| o.id == h.stream) {
                    let o = self.open.remove(at);
                    if self.blocked.as_ref().is_some_and(|b| b.id == o.id) {
                        self.blocked = None;
                    }
                    if code == h2::REFUSED_STREAM {
                        Self::resend(ctx, stats, quota, o.req);
                    } else {
                        count_failure(&mut stats.c.errors, &Failure::Read, 1);
                        if let Some(e) = stats.by_entry.get_mut(o.req.entry as usize) {
                            count_failure(&mut e.errors, &Failure::Read, 1);
                        }
                        stats.in_flight -= 1;
                    }
                }
            }
            h2::SETTINGS => {
                if h.flags & h2::ACK != 0 {
                    return Ok(());
                }
                if payload.len() % 6 != 0 {
                    return Err(Broken);
                }
                for s in payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([s[0], s[1]]);
                    let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    let v = usize::try_from(value).unwrap_or(usize::MAX);
                    match id {
                        h2::SETTINGS_HEADER_TABLE_SIZE => {
                            if v < self.table_size.min(h2::DEFAULT_TABLE_SIZE) {
                                // The encoder must shrink its table: say so, and index no more when the static
                                // request's fields no longer fit.
                                self.size_update = Some(v);
                                if let Some(sb) = &self.static_blocks {
                                    if sb.table_size > v {
                                        self.no_index = true;
                                        self.inserted = false;
                                    }
                                }
                            }
                            self.table_size = v;
                        }
                        h2::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = v,
                        h2::SETTINGS_INITIAL_WINDOW_SIZE => {
                            if value > h2::MAX_WINDOW {
                                return Err(Broken);
                            }
                            let delta = i64::from(value) - self.init_window;
                            self.init_window = i64::from(value);
                            if let Some(b) = &mut self.blocked {
                                b.window += delta;
                            }
                        }
                        h2::SETTINGS_MAX_FRAME_SIZE => {
                            if !(h2::DEFAULT_MAX_FRAME..=0xff_ffff).contains(&v) {
                                return Err(Broken);
                            }
                            self.max_frame = v;
                        }
                        _ => {}
                    }
                }
                h2::put_header(&mut self.wbuf, 0, h2::SETTINGS, h2::ACK, 0);
                if !self.settings_seen {
                    self.settings_seen = true;
                    stats.c.http2.granted(self.cap(ctx) as u64);
                }
                self.send_body(ctx);
            }
            h2::PING if h.flags & h2::ACK == 0 => {
                h2::put_header(&mut self.wbuf, payload.len(), h2::PING, h2::ACK, 0);
                self.wbuf.extend_from_slice(payload);
            }
            h2::GOAWAY => {
                let last = u32::from_be_bytes(payload.get(..4).ok_or(Broken)?.try_into().map_err(|_| Broken)?)
                    & h2::MAX_WINDOW;
                stats.c.http2.goaways += 1;
                self.goaway = true;
                // Streams the server will not process go again, on the next connection.
                let mut i = 0;
                while i < self.open.len() {
                    if self.open[i].id > last {
                        let o = self.open.remove(i);
                        Self::resend(ctx, stats, quota, o.req);
                    } else {
                        i += 1;
                    }
                }
                if self.blocked.as_ref().is_some_and(|b| b.id > last) {
                    self.blocked = None;
                }
                self.resend_queued(ctx, stats, quota);
            }
            h2::WINDOW_UPDATE => {
                let inc = i64::from(u32::from_be_bytes(payload.try_into().map_err(|_| Broken)?) & h2::MAX_WINDOW);
                if h.stream == 0 {
                    self.send_window += inc;
                } else if let Some(b) = self.blocked.as_mut().filter(|b| b.id == h.stream) {
                    b.window += inc;
                }
                self.send_body(ctx);
            }
            // Push was turned off in the client's SETTINGS.
            h2::PUSH_PROMISE => return Err(Broken),
            // PRIORITY and unknown frame types are ignored.
            _ => {}
        }
        Ok(())
    }

    /// A whole header block of `stream`: `:status` is kept, the stream completes with END_STREAM.
    #[expect(clippy::too_many_arguments, reason = "the worker's state, split for the borrow checker")]
    fn headers(
        &mut self,
        ctx: &Ctx,
        io: &mut SlotIo,
        stats: &mut Stats,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        arrived: Instant,
    ) -> Result<(), Broken> {
        let status = h2::response_status(block).map_err(|_| Broken)?;
        let Some(at) = self.open.iter().position(|o| o.id == stream) else {
            return Ok(());
        };
        if (100..200).contains(&status) && !end_stream {
            return Ok(());
        }
        if status != 0 {
            self.open[at].status = status;
            self.inspect(ctx, io, at, Some(status), b"");
        }
        if end_stream {
            self.complete(ctx, io, stats, at, arrived);
        }
        Ok(())
    }
}

impl<S: Stream> Driver for H2<S> {
    fn drive(&mut self, cx: &mut Context<'_>, ctx: &Ctx, io: &mut SlotIo, quota: &mut Option<u64>) -> Poll<End> {
        let cfg = &ctx.cfg;
        let mut now = Instant::now();
        if !self.started {
            let mut stats = ctx.stats.borrow_mut();
            if self.start(ctx, io, &mut stats).is_err() {
                self.fail_all(ctx, &mut stats, quota, Failure::Protocol);
                return Poll::Ready(End::Reconnect { server_closed: false });
            }
        } else if !io.in_flight.is_empty() {
            // A session's next step.
            self.adopt(ctx, io);
        }
        loop {
            let mut progress = false;
            // 1. Take new requests, as many as the connection has streams for.
            if cfg.keep_alive {
                let mut room =
                    if self.goaway { 0 } else { self.cap(ctx).saturating_sub(self.open.len() + self.queue.len()) };
                // A closed load refills a connection's streams in batches (see `refill_batch`).
                if ctx.open.is_none() && !self.open.is_empty() && room > 0 && room < refill_batch(self.cap(ctx)) {
                    let until = *self.held_since.get_or_insert(now) + REFILL_HOLD;
                    if now < until {
                        room = 0;
                        if !self.hold_armed {
                            self.hold_armed = true;
                            ctx.rt.add_timer(until, ctx.rt.current());
                        }
                    }
                }
                if room > 0 || self.open.is_empty() {
                    self.held_since = None;
                    self.hold_armed = false;
                }
                if room > 0 {
                    let queue = &mut self.queue;
                    let acquired = if cfg.request.is_some() {
                        ctx.acquire(quota, room, now, |t| {
                            queue.push_back(Queued { req: InFlight { intended: t, sent: now, entry: 0 }, bytes: None })
                        })
                    } else {
                        let h1 = &mut self.h1;
                        let mut stats = ctx.stats.borrow_mut();
                        ctx.acquire(quota, room, now, |t| {
                            let start = h1.len();
                            let entry = ctx.build(h1);
                            if let Some(e) = stats.entry(entry) {
                                e.sent += 1;
                            }
                            let req = InFlight { intended: t, sent: now, entry };
                            queue.push_back(Queued { req, bytes: Some(start..h1.len()) });
                        })
                    };
                    match acquired {
                        Acquired::Got(n) => {
                            let mut s = ctx.stats.borrow_mut();
                            s.c.sent += n as u64;
                            s.in_flight += n as u64;
                        }
                        Acquired::Wait => ctx.wait_for_work(io.id, cx),
                        Acquired::Done => {
                            if self.open.is_empty() && self.queue.is_empty() {
                                return Poll::Ready(End::Finished);
                            }
                        }
                    }
                }
                if self.goaway && self.open.is_empty() && self.queue.is_empty() {
                    return Poll::Ready(End::Reconnect { server_closed: true });
                }
            } else if self.open.is_empty() && self.queue.is_empty() {
                let end = if cfg.session.is_empty() { End::Reconnect { server_closed: false } } else { End::Step };
                return Poll::Ready(end);
            }
            if self.open_streams(ctx, now).is_err() {
                self.fail_all(ctx, &mut ctx.stats.borrow_mut(), quota, Failure::Protocol);
                return Poll::Ready(End::Reconnect { server_closed: false });
            }

            // 2. Write what is pending.
            if self.stream.try_flush(&ctx.rt).is_err() {
                io.peer_closed = true;
                self.fail_all(ctx, &mut ctx.stats.borrow_mut(), quota, Failure::Write);
                return Poll::Ready(End::Reconnect { server_closed: false });
            }
            while self.wpos < self.wbuf.len() {
                match self.stream.try_write(&ctx.rt, &self.wbuf[self.wpos..]) {
                    Ok(Some(n)) if n > 0 => {
                        self.wpos += n;
                        ctx.stats.borrow_mut().c.bytes_written += n as u64;
                    }
                    Ok(None) => break,
                    Ok(Some(_)) | Err(_) => {
                        io.peer_closed = true;
                        self.fail_all(ctx, &mut ctx.stats.borrow_mut(), quota, Failure::Write);
                        return Poll::Ready(End::Reconnect { server_closed: false });
                    }
                }
            }
            if self.wpos == self.wbuf.len() {
                self.wbuf.clear();
                self.wpos = 0;
            }

            // 3. Read and handle every whole frame.
            let mut scratch = ctx.scratch.borrow_mut();
            match self.stream.try_read(&ctx.rt, &mut scratch[..]) {
                Ok(None) => {}
                Err(_) => {
                    drop(scratch);
                    io.peer_closed = true;
                    self.fail_all(ctx, &mut ctx.stats.borrow_mut(), quota, Failure::Read);
                    return Poll::Ready(End::Reconnect { server_closed: false });
                }
                Ok(Some(read)) => {
                    let n = read.len;
                    let mut stats = ctx.stats.borrow_mut();
                    if n == 0 {
                        drop(scratch);
                        io.peer_closed = true;
                        let clean = self.goaway && self.open.is_empty();
                        self.fail_all(ctx, &mut stats, quota, Failure::Read);
                        return Poll::Ready(End::Reconnect { server_closed: cfg.keep_alive || clean });
                    }
                    now = Instant::now();
                    let arrived = read.arrived.map_or(now, |t| t.min(now));
                    stats.c.bytes_read += n as u64;
                    let mut end = None;
                    let result = if self.rbuf.is_empty() {
                        let data = &scratch[..n];
                        self.frames(ctx, io, &mut stats, quota, data, arrived, &mut end).map(|used| {
                            self.rbuf.extend_from_slice(&data[used..]);
                        })
                    } else {
                        let mut buf = std::mem::take(&mut self.rbuf);
                        buf.extend_from_slice(&scratch[..n]);
                        let r = self.frames(ctx, io, &mut stats, quota, &buf, arrived, &mut end).map(|used| {
                            buf.drain(..used);
                        });
                        self.rbuf = buf;
                        r
                    };
                    if result.is_err() {
                        drop(scratch);
                        self.fail_all(ctx, &mut stats, quota, Failure::Protocol);
                        return Poll::Ready(End::Reconnect { server_closed: false });
                    }
                    if let Some(end) = end {
                        return Poll::Ready(end);
                    }
                    progress = true;
                }
            }
            drop(scratch);

            // 4. The lazy per-connection timeout, at the oldest open stream's deadline.
            if !self.open.is_empty() && !self.armed {
                if let Some(at) = self.open[0].req.sent.checked_add(cfg.timeout) {
                    self.timer_at = at;
                    self.armed = true;
                    ctx.rt.add_timer(at, ctx.rt.current());
                }
            }
            if self.armed && now >= self.timer_at {
                self.armed = false;
                if let Some(o) = self.open.first() {
                    now = Instant::now();
                    if now >= o.req.sent + cfg.timeout {
                        self.fail_all(ctx, &mut ctx.stats.borrow_mut(), quota, Failure::Timeout);
                        return Poll::Ready(End::Reconnect { server_closed: false });
                    }
                    progress = true;
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
}

/// How many streams a closed load lets free before it opens new ones on a connection that still has some
/// open: half of `cap` (at least one), or as many as are free `REFILL_HOLD` after the first of them was. Opening
/// each stream as the one before it ends writes a frame or two per packet, and the server then reads, decrypts
/// and answers one or two requests per system call and TLS record; refilled in batches, the requests of
/// several streams share a packet and a record. h2load, busy on its CPU, batches the same way by being late:
/// it wrote 8 requests per `write` in the run measured in `docs/benchmarks.md` (loadgate, one at a time,
/// 1.7), where nginx gave loadgate 0.91x of h2load's requests/s over TLS and 0.89x over h2c.
fn refill_batch(cap: usize) -> usize {
    (cap / 2).max(1)
}

/// The longest a freed stream waits for others before it is used again (a server that answers streams one by
/// one, far apart, gets them back after this).
const REFILL_HOLD: Duration = Duration::from_micros(100);

#[cfg(test)]
mod tests {
    use super::refill_batch;

    #[test]
    fn streams_are_refilled_half_at_a_time() {
        assert_eq!(refill_batch(16), 8);
        assert_eq!(refill_batch(100), 50);
        assert_eq!(refill_batch(3), 1);
        assert_eq!(refill_batch(1), 1);
    }
}
