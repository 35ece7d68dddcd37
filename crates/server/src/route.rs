//! A request answered, whatever the protocol that carried it: the request as read, and the reply its path and
//! the server's behaviour give (`/ready`, `/echo`, `/status/{code}`, `/delay/{ms}`, `/bytes/{n}`, `/chunked/{n}`).

use std::time::Duration as StdDuration;

use loadgate_model::BuiltinKind;

use crate::behaviour::{Behaviour, MAX_BODY};

const MAX_ROUTE_DELAY_MS: u64 = 3_600_000;

pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) http10: bool,
    pub(crate) keep_alive: bool,
    pub(crate) content_type: Option<&'a [u8]>,
    pub(crate) body: std::borrow::Cow<'a, [u8]>,
}

pub(crate) enum BodySource<'a> {
    Slice(&'a [u8]),
    /// `n` bytes of the pattern.
    Generated(usize),
}

pub(crate) struct Reply<'a> {
    pub(crate) status: u16,
    pub(crate) body: BodySource<'a>,
    pub(crate) chunked: bool,
    pub(crate) delay: Option<StdDuration>,
    pub(crate) content_type: &'a [u8],
    /// CPU work to do before answering (the `cpu` kind's default route).
    pub(crate) burn: Option<(StdDuration, StdDuration)>,
}

impl Reply<'_> {
    /// Does the reply's CPU work, if any, on this thread.
    pub(crate) fn work(&self) {
        if let Some((work, slow)) = self.burn {
            crate::burn::handle_request(work, slow);
        }
    }
}

pub(crate) fn route<'a>(b: &'a Behaviour, req: &'a Request<'a>) -> Reply<'a> {
    let path = req.path.split('?').next().unwrap_or("");
    let default_body = |b: &'a Behaviour| match b.kind {
        BuiltinKind::Echo => BodySource::Slice(&req.body),
        BuiltinKind::Plaintext | BuiltinKind::Delay | BuiltinKind::Cpu => BodySource::Slice(&b.body),
    };
    let default_type = match b.kind {
        BuiltinKind::Echo => req.content_type.unwrap_or(b"application/octet-stream"),
        BuiltinKind::Plaintext | BuiltinKind::Delay | BuiltinKind::Cpu => b"text/plain",
    };
    let mut reply = Reply {
        status: b.status,
        body: default_body(b),
        chunked: b.chunked,
        delay: b.delay,
        content_type: default_type,
        burn: b.burn,
    };
    let bad = |what: &'static str| Reply {
        status: 400,
        body: BodySource::Slice(what.as_bytes()),
        chunked: false,
        delay: None,
        content_type: b"text/plain",
        burn: None,
    };
    if path == "/ready" {
        reply = Reply {
            status: 200,
            body: BodySource::Slice(b"ready\n"),
            chunked: false,
            delay: None,
            content_type: b"text/plain",
            burn: None,
        };
    } else if path == "/echo" {
        reply.body = BodySource::Slice(&req.body);
        reply.content_type = req.content_type.unwrap_or(b"application/octet-stream");
    } else if let Some(code) = path.strip_prefix("/status/") {
        match code.parse::<u16>() {
            Ok(c) if (200..=599).contains(&c) => reply.status = c,
            _ => return bad("the status must be a number from 200 to 599\n"),
        }
    } else if let Some(ms) = path.strip_prefix("/delay/") {
        match ms.parse::<u64>() {
            Ok(ms) if ms <= MAX_ROUTE_DELAY_MS => reply.delay = Some(StdDuration::from_millis(ms)),
            _ => return bad("the delay must be a number of milliseconds up to 3600000\n"),
        }
    } else if let Some(n) = path.strip_prefix("/bytes/") {
        match n.parse::<usize>() {
            Ok(n) if n <= MAX_BODY => {
                reply.body = BodySource::Generated(n);
                reply.content_type = b"text/plain";
            }
            _ => return bad("the size must be a number of bytes up to 67108864\n"),
        }
    } else if let Some(n) = path.strip_prefix("/chunked/") {
        match n.parse::<usize>() {
            Ok(n) if n <= MAX_BODY => {
                reply.body = BodySource::Generated(n);
                reply.chunked = true;
                reply.content_type = b"text/plain";
            }
            _ => return bad("the size must be a number of bytes up to 67108864\n"),
        }
    }
    reply
}
