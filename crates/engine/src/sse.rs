//! An incremental parser of server-sent events (the WHATWG HTML standard, "9.2 Server-sent events",
//! "interpreting an event stream"), fed the bytes of a response body in whatever pieces the reads give.
//!
//! - Line ends: CR, LF or CRLF. A CR that ends one piece and an LF that starts the next are one line end (the
//!   line ends at the CR; the LF is skipped), so the events are the same for every split of the bytes.
//! - A UTF-8 byte order mark at the very start of the stream is skipped (once; it may arrive split).
//! - A line that starts with `:` is a comment: reported as [`SseItem::Comment`] (heartbeats: a caller resets its
//!   idle timer on it), never an event.
//! - `field: value` with one leading space of the value stripped; a line without a colon is a field with an
//!   empty value. `data` appends the value and an LF to the event's data (so several `data:` lines join with
//!   `\n`, the last LF removed at dispatch); `event` sets the event's type (`message` when none); `id` sets the
//!   last event id unless the value contains NUL; `retry` with ASCII digits only is reported as
//!   [`SseItem::Retry`]; any other field is ignored.
//! - An empty line dispatches the event; an event whose data is empty is not dispatched (its type is reset).
//! - An event whose data equals the configured done sentinel (OpenAI's `[DONE]`) is reported as
//!   [`SseItem::Done`], not as an event, and everything after it is ignored.
//! - At the end of the stream ([`SseParser::finish`]) a partial event (fields after the last empty line) is
//!   discarded, and [`SseEnd::discarded`] says so.
//!
//! The data is kept as bytes: the standard decodes the stream as UTF-8 (invalid sequences becoming U+FFFD);
//! a caller that wants text decodes the event's data itself, and the JSON scanners read bytes anyway.
//!
//! # Bounded memory
//!
//! The parser holds at most one line ([`SseLimits::max_line`], counted without its line end) and one event's
//! data ([`SseLimits::max_event`], the data with its joining LFs) besides the event type and id (each a line at
//! most). A stream that exceeds either is an [`SseError`], reported with its byte offset, never a panic; the
//! parser then stays failed and ignores further input. Each byte is looked at a bounded number of times, so a
//! feed costs time linear in its length.
//!
//! # Where events completed
//!
//! Every item carries an [`SseMark`]: the caller's number for the read whose bytes completed it and the
//! stream offset just after the line end that completed it, so a worker can stamp each event with the
//! receive time of that read (events that complete in one read share it).

use thiserror::Error;

/// The UTF-8 byte order mark.
const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// What a parser holds at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseLimits {
    /// The longest line, in bytes without its line end (default 256 KiB).
    pub max_line: usize,
    /// The most data one event may carry, in bytes, its joining LFs included (default 1 MiB).
    pub max_event: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits { max_line: 256 * 1024, max_event: 1024 * 1024 }
    }
}

/// Where an item completed: the read that carried its last line end and the stream offset after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseMark {
    /// The caller's number of the read (what it passed to [`SseParser::feed`]).
    pub read: u64,
    /// Bytes of the stream up to and including the line end that completed the item.
    pub offset: u64,
}

/// A dispatched event, borrowed from the parser until the next item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The event's type: the last `event:` value, or `message`.
    pub event: &'a [u8],
    /// The data lines joined with `\n`.
    pub data: &'a [u8],
    /// The last event id so far (it persists across events, as the standard's last event ID buffer does).
    pub id: &'a [u8],
}

/// What the parser reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// An event.
    Event(SseEvent<'a>, SseMark),
    /// A comment line (a heartbeat): not an event.
    Comment(SseMark),
    /// A `retry:` field with a valid number of milliseconds.
    Retry(u64, SseMark),
    /// The done sentinel: the stream's end, not an event.
    Done(SseMark),
}

/// A stream that broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SseError {
    #[error("an event-stream line longer than {limit} bytes at byte {offset}")]
    LineTooLong { limit: usize, offset: u64 },
    #[error("an event's data over {limit} bytes at byte {offset}")]
    EventTooLarge { limit: usize, offset: u64 },
}

/// What remained when the stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SseEnd {
    /// A partial event (a field or part of a line after the last dispatch) was discarded.
    pub discarded: bool,
    /// The done sentinel was seen.
    pub done: bool,
    /// Bytes of the stream in all.
    pub bytes: u64,
}

/// The incremental parser of one event stream. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct SseParser {
    limits: SseLimits,
    done_sentinel: Option<Vec<u8>>,
    /// Bytes of the current line that arrived in earlier pieces.
    line: Vec<u8>,
    /// The event's data, each line followed by an LF.
    data: Vec<u8>,
    event: Vec<u8>,
    id: Vec<u8>,
    /// A field was read since the last dispatch (so the end of the stream discards something).
    pending: bool,
    /// The last byte seen was a CR that ended a line: an LF right after it is part of that line end.
    after_cr: bool,
    /// The first bytes, held until they are known to be a BOM or not.
    head: [u8; 3],
    head_len: usize,
    head_done: bool,
    offset: u64,
    done: bool,
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser with these limits, recognising `done` (e.g. `b"[DONE]"`) as the end of the stream.
    pub fn new(limits: SseLimits, done: Option<&[u8]>) -> SseParser {
        SseParser {
            limits,
            done_sentinel: done.map(<[u8]>::to_vec),
            line: Vec::new(),
            data: Vec::new(),
            event: Vec::new(),
            id: Vec::new(),
            pending: false,
            after_cr: false,
            head: [0; 3],
            head_len: 0,
            head_done: false,
            offset: 0,
            done: false,
            failed: None,
        }
    }

    /// Whether the done sentinel was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds the next piece of the stream, read by the caller's read number `read`; `sink` gets each item as it
    /// completes. An error stays: every later feed returns it again.
    pub fn feed(&mut self, bytes: &[u8], read: u64, sink: &mut impl FnMut(SseItem<'_>)) -> Result<(), SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut rest = bytes;
        if !self.head_done {
            while let Some((&b, tail)) = rest.split_first() {
                if b != BOM[self.head_len] {
                    break;
                }
                self.head[self.head_len] = b;
                self.head_len += 1;
                self.offset += 1;
                rest = tail;
                if self.head_len == 3 {
                    // A whole BOM: skipped.
                    self.head_len = 0;
                    self.head_done = true;
                    break;
                }
            }
            if !self.head_done && rest.is_empty() {
                // Still a possible BOM.
                return Ok(());
            }
            self.head_done = true;
            if self.head_len > 0 {
                // A BOM's prefix that was not one: ordinary bytes after all (they have no line end).
                let held = self.head;
                let n = self.head_len;
                self.head_len = 0;
                self.offset -= n as u64;
                self.scan(&held[..n], read, sink)?;
            }
        }
        self.scan(rest, read, sink)
    }

    fn scan(&mut self, bytes: &[u8], read: u64, sink: &mut impl FnMut(SseItem<'_>)) -> Result<(), SseError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.done {
                self.offset += rest.len() as u64;
                return Ok(());
            }
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    self.offset += 1;
                    rest = &rest[1..];
                    continue;
                }
            }
            match memchr::memchr2(b'\r', b'\n', rest) {
                None => {
                    if self.line.len() + rest.len() > self.limits.max_line {
                        return Err(self.fail(SseError::LineTooLong {
                            limit: self.limits.max_line,
                            offset: self.offset + (self.limits.max_line - self.line.len()) as u64,
                        }));
                    }
                    self.line.extend_from_slice(rest);
                    self.offset += rest.len() as u64;
                    return Ok(());
                }
                Some(i) => {
                    if self.line.len() + i > self.limits.max_line {
                        return Err(self.fail(SseError::LineTooLong {
                            limit: self.limits.max_line,
                            offset: self.offset + (self.limits.max_line - self.line.len()) as u64,
                        }));
                    }
                    self.after_cr = rest[i] == b'\r';
                    self.offset += i as u64 + 1;
                    let mark = SseMark { read, offset: self.offset };
                    if self.line.is_empty() {
                        self.line_done(&rest[..i], mark, sink)?;
                    } else {
                        let mut line = std::mem::take(&mut self.line);
                        line.extend_from_slice(&rest[..i]);
                        let r = self.line_done(&line, mark, sink);
                        line.clear();
                        self.line = line;
                        r?;
                    }
                    rest = &rest[i + 1..];
                }
            }
        }
        Ok(())
    }

    fn fail(&mut self, e: SseError) -> SseError {
        self.failed = Some(e.clone());
        e
    }

    /// One whole line, without its line end.
    fn line_done(&mut self, line: &[u8], mark: SseMark, sink: &mut impl FnMut(SseItem<'_>)) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(mark, sink);
            return Ok(());
        }
        if line[0] == b':' {
            sink(SseItem::Comment(mark));
            return Ok(());
        }
        self.pending = true;
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &line[..0]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limits.max_event {
                    return Err(
                        self.fail(SseError::EventTooLarge { limit: self.limits.max_event, offset: mark.offset })
                    );
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            b"id" if memchr::memchr(0, value).is_none() => {
                self.id.clear();
                self.id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only; a number past u64 saturates.
                let ms = value.iter().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')));
                sink(SseItem::Retry(ms, mark));
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, mark: SseMark, sink: &mut impl FnMut(SseItem<'_>)) {
        self.pending = false;
        if self.data.is_empty() {
            self.event.clear();
            return;
        }
        self.data.pop();
        if self.done_sentinel.as_deref() == Some(&self.data[..]) {
            self.done = true;
            sink(SseItem::Done(mark));
        } else {
            let event = if self.event.is_empty() { &b"message"[..] } else { &self.event[..] };
            sink(SseItem::Event(SseEvent { event, data: &self.data, id: &self.id }, mark));
        }
        self.data.clear();
        self.event.clear();
    }

    /// The stream ended: what was left is discarded (the standard never dispatches a partial event).
    pub fn finish(&mut self) -> SseEnd {
        let discarded = !self.done && (self.pending || !self.line.is_empty() || (!self.head_done && self.head_len > 0));
        self.pending = false;
        self.line.clear();
        self.data.clear();
        self.event.clear();
        SseEnd { discarded, done: self.done, bytes: self.offset }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An owned copy of an item, for comparing.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Owned {
        Event { event: String, data: String, id: String, offset: u64 },
        Comment(u64),
        Retry(u64),
        Done(u64),
    }

    fn own(item: SseItem<'_>) -> Owned {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match item {
            SseItem::Event(e, m) => Owned::Event { event: s(e.event), data: s(e.data), id: s(e.id), offset: m.offset },
            SseItem::Comment(m) => Owned::Comment(m.offset),
            SseItem::Retry(ms, _) => Owned::Retry(ms),
            SseItem::Done(m) => Owned::Done(m.offset),
        }
    }

    fn parse_pieces(pieces: &[&[u8]], done: Option<&[u8]>) -> (Vec<Owned>, Result<SseEnd, SseError>) {
        let mut p = SseParser::new(SseLimits::default(), done);
        let mut out = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            if let Err(e) = p.feed(piece, i as u64, &mut |item| out.push(own(item))) {
                return (out, Err(e));
            }
        }
        (out, Ok(p.finish()))
    }

    fn parse(bytes: &[u8]) -> Vec<Owned> {
        parse_pieces(&[bytes], Some(b"[DONE]")).0
    }

    fn data(items: &[Owned]) -> Vec<String> {
        items
            .iter()
            .filter_map(|i| match i {
                Owned::Event { data, .. } => Some(data.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_empty_line_dispatches_an_event_of_type_message() {
        let items = parse(b"data: hello\n\n");
        assert_eq!(
            items,
            vec![Owned::Event { event: "message".into(), data: "hello".into(), id: String::new(), offset: 13 }]
        );
    }

    #[test]
    fn cr_lf_and_crlf_all_end_lines() {
        assert_eq!(data(&parse(b"data: a\r\rdata: b\n\ndata: c\r\n\r\n")), ["a", "b", "c"]);
    }

    #[test]
    fn a_cr_at_a_pieces_end_and_an_lf_in_the_next_are_one_line_end() {
        let (items, end) = parse_pieces(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n", b"\r\n"], None);
        assert_eq!(data(&items), ["a", "b"]);
        // The first event completed at the CR of its empty line, in the second read.
        assert!(matches!(items[0], Owned::Event { offset: 10, .. }));
        assert!(!end.unwrap().discarded);
    }

    #[test]
    fn a_leading_bom_is_skipped_even_when_split_but_only_at_the_start() {
        let (items, _) = parse_pieces(&[b"\xef", b"\xbb", b"\xbfdata: x\n\n"], None);
        assert_eq!(data(&items), ["x"]);
        // A second BOM is part of the field name, which is then unknown.
        assert_eq!(data(&parse(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n")), ["y"]);
        // A BOM's prefix that is not one is kept as bytes of the line.
        assert_eq!(data(&parse(b"\xefdata: x\n\ndata: y\n\n")), ["y"]);
    }

    #[test]
    fn comments_are_reported_as_heartbeats_and_are_never_events() {
        let items = parse(b": ping\n\n:\ndata: x\n: inside an event\n\n");
        assert_eq!(items.iter().filter(|i| matches!(i, Owned::Comment(_))).count(), 3);
        assert_eq!(data(&items), ["x"]);
    }

    #[test]
    fn multi_line_data_joins_with_lf_and_one_leading_space_is_stripped() {
        assert_eq!(data(&parse(b"data:a\ndata:  b\ndata\ndata: \n\n")), ["a\n b\n\n"]);
    }

    #[test]
    fn event_sets_the_type_for_one_event_only() {
        let items = parse(b"event: add\ndata: 1\n\ndata: 2\n\n");
        assert!(matches!(&items[0], Owned::Event { event, .. } if event == "add"));
        assert!(matches!(&items[1], Owned::Event { event, .. } if event == "message"));
    }

    #[test]
    fn an_id_persists_and_an_id_with_nul_is_ignored() {
        let items = parse(b"id: 7\ndata: a\n\ndata: b\n\nid: 8\0\ndata: c\n\nid\ndata: d\n\n");
        let ids: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                Owned::Event { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["7", "7", "7", ""]);
    }

    #[test]
    fn retry_is_reported_only_when_it_is_all_digits() {
        let items = parse(b"retry: 1500\nretry: 15a\nretry: -1\nretry:\nretry: 99999999999999999999999\n");
        assert_eq!(items, vec![Owned::Retry(1500), Owned::Retry(u64::MAX)]);
    }

    #[test]
    fn an_event_with_empty_data_is_not_dispatched() {
        assert_eq!(parse(b"event: x\n\nid: 1\n\n"), vec![]);
        // A type set before an empty dispatch does not leak into the next event.
        assert!(matches!(&parse(b"event: x\n\ndata: y\n\n")[0], Owned::Event { event, .. } if event == "message"));
    }

    #[test]
    fn unknown_fields_and_lines_without_a_colon_are_ignored() {
        assert_eq!(data(&parse(b"foo: bar\nbaz\ndata: ok\n\n")), ["ok"]);
    }

    #[test]
    fn a_partial_event_at_the_end_is_discarded_and_reported() {
        let (items, end) = parse_pieces(&[b"data: a\n\ndata: b\n"], None);
        assert_eq!(data(&items), ["a"]);
        assert!(end.unwrap().discarded);
        let (_, end) = parse_pieces(&[b"data: a\n\ndata: b"], None);
        assert!(end.unwrap().discarded);
        let (_, end) = parse_pieces(&[b"data: a\n\n"], None);
        assert!(!end.unwrap().discarded);
    }

    #[test]
    fn the_done_sentinel_ends_the_stream_and_is_not_an_event() {
        let (items, end) = parse_pieces(&[b"data: {\"x\":1}\n\ndata: [DONE]\n\ndata: after\n\n"], Some(b"[DONE]"));
        assert_eq!(data(&items), ["{\"x\":1}"]);
        assert!(matches!(items.last(), Some(Owned::Done(_))));
        let end = end.unwrap();
        assert!(end.done && !end.discarded);
        // Without a sentinel it is an ordinary event.
        let (items, _) = parse_pieces(&[b"data: [DONE]\n\n"], None);
        assert_eq!(data(&items), ["[DONE]"]);
    }

    #[test]
    fn each_item_carries_the_read_that_completed_it() {
        let mut p = SseParser::new(SseLimits::default(), None);
        let mut reads = Vec::new();
        let mut sink = |i: SseItem<'_>| {
            if let SseItem::Event(_, m) = i {
                reads.push(m.read)
            }
        };
        p.feed(b"data: a\n", 5, &mut sink).unwrap();
        p.feed(b"\ndata: b\n\ndata: c\n\n", 6, &mut sink).unwrap();
        assert_eq!(reads, [6, 6, 6]);
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_and_the_parser_stays_failed() {
        let mut p = SseParser::new(SseLimits { max_line: 8, max_event: 100 }, None);
        let mut n = 0;
        assert!(p.feed(b"data: 12", 0, &mut |_| n += 1).is_ok());
        let e = p.feed(b"3\n\n", 1, &mut |_| n += 1).unwrap_err();
        assert_eq!(e, SseError::LineTooLong { limit: 8, offset: 8 });
        assert_eq!(p.feed(b"data: x\n\n", 2, &mut |_| n += 1).unwrap_err(), e);
        assert_eq!(n, 0);
    }

    #[test]
    fn data_over_the_event_limit_is_an_error() {
        let mut p = SseParser::new(SseLimits { max_line: 100, max_event: 6 }, None);
        p.feed(b"data: abc\n", 0, &mut |_| ()).unwrap();
        let e = p.feed(b"data: de\n\n", 0, &mut |_| ()).unwrap_err();
        assert!(matches!(e, SseError::EventTooLarge { limit: 6, .. }));
    }

    #[test]
    fn a_capture_of_sse_starlette_parses_at_every_split() {
        // tests/data/sse/starlette.sse: curl's bytes from sse-starlette under uvicorn (app.py beside it).
        let bytes: &[u8] = include_bytes!("../tests/data/sse/starlette.sse");
        let (items, end) = parse_pieces(&[bytes], Some(b"[DONE]"));
        let want: Vec<Owned> = (0..5)
            .flat_map(|i| {
                [
                    Owned::Event {
                        event: "tick".into(),
                        data: format!("line one {i}\nline two {i}"),
                        id: i.to_string(),
                        offset: 0,
                    },
                    Owned::Comment(0),
                ]
            })
            .chain([Owned::Done(0)])
            .collect();
        let no_offsets = |items: &[Owned]| -> Vec<Owned> {
            items
                .iter()
                .map(|i| match i.clone() {
                    Owned::Event { event, data, id, .. } => Owned::Event { event, data, id, offset: 0 },
                    Owned::Comment(_) => Owned::Comment(0),
                    Owned::Done(_) => Owned::Done(0),
                    other => other,
                })
                .collect()
        };
        assert_eq!(no_offsets(&items), want);
        assert_eq!(end.clone().unwrap(), SseEnd { discarded: false, done: true, bytes: bytes.len() as u64 });
        for cut in 0..=bytes.len() {
            assert_eq!(parse_pieces(&[&bytes[..cut], &bytes[cut..]], Some(b"[DONE]")), (items.clone(), end.clone()));
        }
    }

    /// A stream of the usual kinds of line, from generated parts.
    fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            Just(b"data: x".to_vec()),
            Just(b"data:yz".to_vec()),
            Just(b"event: e".to_vec()),
            Just(b"id: 3".to_vec()),
            Just(b"retry: 10".to_vec()),
            Just(b": hb".to_vec()),
            Just(b"data: [DONE]".to_vec()),
            Just(Vec::new()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ];
        let end = prop_oneof![Just(b"\n".to_vec()), Just(b"\r".to_vec()), Just(b"\r\n".to_vec())];
        (any::<bool>(), proptest::collection::vec((line, end), 0..24)).prop_map(|(bom, lines)| {
            let mut v = if bom { BOM.to_vec() } else { Vec::new() };
            for (l, e) in lines {
                v.extend(l);
                v.extend(e);
            }
            v
        })
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_items_as_one_piece(bytes in stream_strategy(), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
            let whole = parse_pieces(&[&bytes], Some(b"[DONE]"));
            let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            at.sort_unstable();
            let mut pieces = Vec::new();
            let mut last = 0;
            for c in at {
                pieces.push(&bytes[last..c]);
                last = c;
            }
            pieces.push(&bytes[last..]);
            let split = parse_pieces(&pieces, Some(b"[DONE]"));
            prop_assert_eq!(whole.0, split.0);
            prop_assert_eq!(whole.1.map(|e| (e.discarded, e.done)), split.1.map(|e| (e.discarded, e.done)));
        }

        #[test]
        fn random_bytes_never_panic_and_stay_within_the_limits(bytes in proptest::collection::vec(any::<u8>(), 0..600), cut in any::<usize>()) {
            let limits = SseLimits { max_line: 32, max_event: 64 };
            let mut p = SseParser::new(limits, Some(b"[DONE]"));
            let c = cut % (bytes.len() + 1);
            let mut sink = |item: SseItem<'_>| {
                if let SseItem::Event(e, _) = item {
                    assert!(e.data.len() < 64);
                }
            };
            let _ = p.feed(&bytes[..c], 0, &mut sink).and_then(|()| p.feed(&bytes[c..], 1, &mut sink));
            prop_assert!(p.line.len() <= 32 && p.data.len() <= 64);
            p.finish();
        }
    }
}
