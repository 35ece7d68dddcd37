//! Request bytes: a static request serialized once per phase, or a template filled per request.

use std::sync::Arc;

use loadgate_plan::RequestPlan;
use loadgate_plan::{Generator, Segment};

use crate::data::{percent_encode, write_u64, Gen, Picker, Rng};
use crate::vars::Vars;

/// A phase's request, serialized once, and repeated so that a write of `n` pipelined requests starting at any
/// byte offset is a single contiguous slice.
#[derive(Debug)]
pub(crate) struct RequestBytes {
    /// The request `copies` times over.
    repeated: Box<[u8]>,
    /// The length of one request.
    len: usize,
    /// The method is HEAD: responses carry no body.
    pub head: bool,
}

impl RequestBytes {
    /// `pipeline` is the most requests ever unwritten on one connection at once.
    pub fn new(one: Vec<u8>, pipeline: usize, head: bool) -> Self {
        let copies = pipeline.max(1) + 1;
        let len = one.len();
        Self { repeated: one.repeat(copies).into_boxed_slice(), len, head }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The next bytes to write: `unwritten` bytes of the endless stream of requests, starting `offset` bytes
    /// into a request (`offset < len`). May return fewer bytes than asked; never more.
    pub fn slice(&self, offset: usize, unwritten: usize) -> &[u8] {
        let end = self.repeated.len().min(offset + unwritten);
        &self.repeated[offset.min(end)..end]
    }
}

/// Why a request cannot be put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidRequest(pub String);

/// Serializes a static request: request line, `Host` (unless the plan sets one), the plan's headers in order,
/// `Content-Length` for a body (unless set), and `Connection: close` when connections are not kept alive
/// (unless the plan sets `Connection`).
pub(crate) fn serialize(plan: &RequestPlan, host: &str, keep_alive: bool) -> Result<Vec<u8>, InvalidRequest> {
    let static_only = RequestPlan { dynamic: None, ..plan.clone() };
    let t = Template::new(&static_only, host, keep_alive)?;
    let mut out = Vec::new();
    t.render(&mut [], &mut Rng::new(0), UserValues::default(), &mut out, &mut Vec::new());
    Ok(out)
}

/// One piece of a request template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Literal bytes: a range of the template's text.
    Lit(usize, usize),
    /// The value of generator `index`, percent-encoded when `encode`.
    Gen { index: usize, encode: bool },
    /// `Content-Length: N\r\n` for a body generated per request.
    Length,
    /// A session variable's value (captured by an earlier step), percent-encoded when `encode`.
    Var { slot: u16, encode: bool },
    /// The user's cookies for this request's path (`Cookie: a=1; b=2\r\n`), when it has any.
    Cookies,
}

/// A user's cookie jar as requests read it: the `Cookie` header line for a request path, when one applies.
pub(crate) trait CookieHeader {
    /// Appends `Cookie: a=1; b=2\r\n` for the cookies whose path matches `path` (nothing when none does).
    fn write_header(&self, path: &[u8], out: &mut Vec<u8>);
}

/// What a user's request is filled with besides generated values: its variables and its cookies.
#[derive(Clone, Copy, Default)]
pub(crate) struct UserValues<'a> {
    pub vars: Option<&'a Vars>,
    pub cookies: Option<&'a dyn CookieHeader>,
}

/// A request compiled once per phase into literal bytes and generator slots, in wire order. A request without
/// generators is a single literal piece.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    text: Box<[u8]>,
    pieces: Vec<Piece>,
    /// Where the body's pieces start.
    body_start: usize,
    /// There is a [`Piece::Length`]: the body is rendered first, to know its length.
    measure_body: bool,
    generators: Vec<Generator>,
    /// The session variables the request uses, with where (what a value there must not contain).
    uses: Vec<(u16, Place)>,
    /// The method is HEAD: responses carry no body.
    pub head: bool,
}

/// Where a variable's value goes in a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The request line, as it is: no space or control byte.
    Path,
    /// Percent-encoded (a query value): anything goes.
    Encoded,
    /// A header value: no CR, LF or NUL.
    Header,
    /// The body: anything goes.
    Body,
}

/// Why a session step cannot be sent: a variable it uses was never captured, or holds what would break the
/// request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    Missing(u16),
    Unsafe(u16),
}

struct Builder {
    text: Vec<u8>,
    pieces: Vec<Piece>,
    /// Pieces before this index are never extended: the body's first text starts a piece of its own, so that a
    /// body rendered apart (to measure its length) is the body's pieces alone.
    sealed: usize,
}

impl Builder {
    fn lit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        let open = self.pieces.len() > self.sealed;
        match self.pieces.last_mut() {
            Some(Piece::Lit(_, end)) if open && *end == start => *end = self.text.len(),
            _ => self.pieces.push(Piece::Lit(start, self.text.len())),
        }
    }

    fn segments(&mut self, segs: &[Segment]) {
        for s in segs {
            match s {
                Segment::Text(t) => self.lit(t.as_bytes()),
                Segment::Gen { index, encode } => self.pieces.push(Piece::Gen { index: *index, encode: *encode }),
                Segment::Var { slot, encode } => self.pieces.push(Piece::Var { slot: *slot, encode: *encode }),
            }
        }
    }
}

fn text(s: &str) -> Vec<Segment> {
    vec![Segment::Text(s.to_owned())]
}

impl Template {
    /// Compiles a request, static or with generated values (`plan.dynamic`), checking everything that can be
    /// checked before the load starts: the method and header names are tokens, the literal path and header
    /// values hold no forbidden bytes, and no generator can produce one there.
    pub fn new(plan: &RequestPlan, host: &str, keep_alive: bool) -> Result<Template, InvalidRequest> {
        Self::with_cookies(plan, host, keep_alive, false)
    }

    /// [`new`](Self::new); with `cookies`, the request sends the user's cookies for its path (unless it sets
    /// its own `Cookie` header).
    pub fn with_cookies(
        plan: &RequestPlan,
        host: &str,
        keep_alive: bool,
        cookies: bool,
    ) -> Result<Template, InvalidRequest> {
        let method = plan.method.trim();
        if method.is_empty() || !method.bytes().all(is_token_byte) {
            return Err(InvalidRequest(format!("the method `{}` is not a valid HTTP token", plan.method)));
        }
        check_value("Host", host)?;
        let (path, headers, body, generators) = match &plan.dynamic {
            Some(d) => (d.path.clone(), d.headers.clone(), d.body.clone(), d.generators.clone()),
            None => (
                text(&plan.path),
                plan.headers.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
                plan.body.as_deref().map(text),
                Vec::new(),
            ),
        };
        let path_bad = |b: u8| b <= b' ' || b == 0x7f;
        let value_bad = |b: u8| b == b'\r' || b == b'\n' || b == 0;
        // Generated values that would break the request line or a header.
        let check_gens = |segs: &[Segment], bad: &dyn Fn(u8) -> bool, place: &str| -> Result<(), InvalidRequest> {
            for s in segs {
                match s {
                    Segment::Text(t) if t.bytes().any(bad) => {
                        return Err(InvalidRequest(format!("{place} `{t}` contains spaces or control characters")));
                    }
                    Segment::Gen { index, encode } => {
                        let g = generators.get(*index).ok_or_else(|| {
                            InvalidRequest(format!("{place} refers to generator {index}, which the plan lacks"))
                        })?;
                        if !encode {
                            if let Some(v) = Gen::may_produce(g, bad) {
                                return Err(InvalidRequest(format!(
                                    "{place} may receive the value `{v}`, which contains spaces or control characters"
                                )));
                            }
                        }
                    }
                    Segment::Text(_) | Segment::Var { .. } => {}
                }
            }
            Ok(())
        };
        let path_empty = path.iter().all(|s| matches!(s, Segment::Text(t) if t.is_empty()));
        let path = if path_empty { text("/") } else { path };
        check_gens(&path, &path_bad, "the path")?;
        let mut has_host = false;
        let mut has_length = false;
        let mut has_connection = false;
        let mut has_cookie = false;
        for (name, value) in &headers {
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(InvalidRequest(format!("the header name `{name}` is not a valid HTTP token")));
            }
            check_gens(value, &value_bad, &format!("the value of header `{name}`"))?;
            has_host |= name.eq_ignore_ascii_case("host");
            has_length |= name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding");
            has_connection |= name.eq_ignore_ascii_case("connection");
            has_cookie |= name.eq_ignore_ascii_case("cookie");
        }
        if let Some(b) = &body {
            check_gens(b, &|_| false, "the body")?;
        }

        let mut uses = Vec::new();
        let mut note_vars = |segs: &[Segment], place: Place| {
            for s in segs {
                if let Segment::Var { slot, encode } = s {
                    uses.push((*slot, if *encode { Place::Encoded } else { place }));
                }
            }
        };
        note_vars(&path, Place::Path);
        for (_, value) in &headers {
            note_vars(value, Place::Header);
        }
        if let Some(b) = &body {
            note_vars(b, Place::Body);
        }
        let mut b = Builder { text: Vec::new(), pieces: Vec::new(), sealed: 0 };
        b.lit(method.as_bytes());
        b.lit(b" ");
        b.segments(&path);
        b.lit(b" HTTP/1.1\r\n");
        if !has_host {
            b.lit(b"Host: ");
            b.lit(host.as_bytes());
            b.lit(b"\r\n");
        }
        for (name, value) in &headers {
            b.lit(name.as_bytes());
            b.lit(b": ");
            b.segments(value);
            b.lit(b"\r\n");
        }
        let generated_body = body
            .as_ref()
            .is_some_and(|segs| segs.iter().any(|s| matches!(s, Segment::Gen { .. } | Segment::Var { .. })));
        if let Some(segs) = &body {
            if !has_length {
                if generated_body {
                    b.pieces.push(Piece::Length);
                } else {
                    let len: usize = segs.iter().map(|s| if let Segment::Text(t) = s { t.len() } else { 0 }).sum();
                    b.lit(format!("Content-Length: {len}\r\n").as_bytes());
                }
            }
        }
        if !keep_alive && !has_connection {
            b.lit(b"Connection: close\r\n");
        }
        if cookies && !has_cookie {
            b.pieces.push(Piece::Cookies);
        }
        b.lit(b"\r\n");
        let body_start = b.pieces.len();
        b.sealed = body_start;
        if let Some(segs) = &body {
            b.segments(segs);
        }
        let measure_body = b.pieces.contains(&Piece::Length);
        Ok(Template {
            text: b.text.into_boxed_slice(),
            pieces: b.pieces,
            measure_body,
            body_start,
            generators,
            uses,
            head: method.eq_ignore_ascii_case("HEAD"),
        })
    }

    /// Whether the request can be sent with these variables: each it uses is set and fits where it goes.
    pub fn blocked(&self, vars: &Vars) -> Option<Blocked> {
        for &(slot, place) in &self.uses {
            let Some(v) = vars.get(slot) else {
                return Some(Blocked::Missing(slot));
            };
            let (in_header, in_path) = crate::check::capture::unsafe_in(v);
            let bad = match place {
                Place::Path => in_path.is_some(),
                Place::Header => in_header.is_some(),
                Place::Encoded | Place::Body => false,
            };
            if bad {
                return Some(Blocked::Unsafe(slot));
            }
        }
        None
    }

    /// The generators of this request with their state for worker `worker` of `workers`.
    pub fn generators(&self, worker: usize, workers: usize) -> Vec<Gen> {
        self.generators.iter().map(|g| Gen::new(g, worker, workers)).collect()
    }

    /// Appends one request to `out`. `gens` is this template's generator state (from
    /// [`generators`](Self::generators)); `scratch` holds a generated body while its length is measured.
    /// `vars` fills the session variables the request uses (see [`blocked`](Self::blocked)).
    pub fn render(
        &self,
        gens: &mut [Gen],
        rng: &mut Rng,
        user: UserValues<'_>,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) {
        let start = out.len();
        if self.measure_body {
            scratch.clear();
            self.render_pieces(&self.pieces[self.body_start..], gens, rng, user, scratch, 0, 0);
            self.render_pieces(&self.pieces[..self.body_start], gens, rng, user, out, scratch.len(), start);
            out.extend_from_slice(scratch);
        } else {
            self.render_pieces(&self.pieces, gens, rng, user, out, 0, start);
        }
    }

    #[expect(clippy::too_many_arguments, reason = "one request's parts, each used once")]
    fn render_pieces(
        &self,
        pieces: &[Piece],
        gens: &mut [Gen],
        rng: &mut Rng,
        user: UserValues<'_>,
        out: &mut Vec<u8>,
        body_len: usize,
        line_start: usize,
    ) {
        let vars = user.vars;
        for p in pieces {
            match *p {
                Piece::Lit(a, b) => out.extend_from_slice(&self.text[a..b]),
                Piece::Gen { index, encode } => {
                    if let Some(g) = gens.get_mut(index) {
                        g.fill(rng, encode, out);
                    }
                }
                Piece::Var { slot, encode } => {
                    if let Some(v) = vars.and_then(|v| v.get(slot)) {
                        if encode {
                            percent_encode(v, out);
                        } else {
                            out.extend_from_slice(v);
                        }
                    }
                }
                Piece::Cookies => {
                    if let Some(jar) = user.cookies {
                        // The request line is `METHOD PATH HTTP/1.1`: the path is between its spaces.
                        let line = &out[line_start.min(out.len())..];
                        let path = line
                            .iter()
                            .position(|&b| b == b' ')
                            .map(|a| &line[a + 1..])
                            .map(|rest| &rest[..rest.iter().position(|&b| b == b' ').unwrap_or(rest.len())])
                            .unwrap_or(b"/");
                        // The path is copied out of `out` before the header is appended to it: on the stack,
                        // as paths are short.
                        let mut stack = [0u8; 1024];
                        if path.len() <= stack.len() {
                            let n = path.len();
                            stack[..n].copy_from_slice(path);
                            jar.write_header(&stack[..n], out);
                        } else {
                            let long = path.to_vec();
                            jar.write_header(&long, out);
                        }
                    }
                }
                Piece::Length => {
                    out.extend_from_slice(b"Content-Length: ");
                    write_u64(out, body_len as u64);
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
    }
}

/// A worker's requests when they are built one at a time (a mix, or generated values): each request picks its
/// mix entry and fills its generators into a buffer the caller reuses. Its random draws come from sources keyed
/// by (the plan's seed, the request's global index, the call site), the index striped as `seq()` is (the
/// worker's or stripe's place, then every `streams`-th), so the values do not depend on how many workers or
/// shards send the plan.
#[derive(Debug)]
pub(crate) struct Built {
    entries: Vec<(Arc<Template>, Vec<Gen>)>,
    /// `None` with a single entry.
    picker: Option<Picker>,
    seed: u64,
    /// The global index of the next request, and the distance to the worker's following one.
    index: u64,
    stride: u64,
    scratch: Vec<u8>,
}

impl Built {
    /// Worker (or stripe) `worker` of `workers`: its requests have global indexes `worker + k * workers`, and
    /// sequences interleave across workers the same way. `weights` has one weight per template (ignored with a single template).
    pub fn new(
        templates: &[Arc<Template>],
        weights: &[u32],
        seed: u64,
        worker: usize,
        workers: usize,
    ) -> Result<Built, InvalidRequest> {
        let picker = if templates.len() > 1 {
            Some(Picker::new(weights).ok_or_else(|| InvalidRequest("the mix's weights sum to zero".into()))?)
        } else {
            None
        };
        Ok(Built {
            entries: templates.iter().map(|t| (t.clone(), t.generators(worker, workers))).collect(),
            picker,
            seed,
            index: worker as u64,
            stride: workers.max(1) as u64,
            scratch: Vec::new(),
        })
    }

    /// Appends the next request to `out` and returns its entry (its index in the mix).
    pub fn next(&mut self, out: &mut Vec<u8>) -> u32 {
        // The choice has its own source, so that the sequence of choices does not depend on the values.
        let entry = self.picker.as_ref().map_or(0, |p| p.pick(&mut Rng::keyed(self.seed, self.index, PICK)));
        self.render(entry, UserValues::default(), out);
        u32::try_from(entry).unwrap_or(0)
    }

    /// Renders entry `entry` as the request of the current global index, then moves to the next index.
    fn render(&mut self, entry: usize, user: UserValues<'_>, out: &mut Vec<u8>) {
        let mut data = Rng::keyed(self.seed, self.index, VALUES);
        self.index = self.index.wrapping_add(self.stride);
        if let Some((t, gens)) = self.entries.get_mut(entry) {
            t.render(gens, &mut data, user, out, &mut self.scratch);
        }
    }

    /// Appends a request of entry `entry` (a session's request step) to `out`, without choosing, filled with
    /// the user's variables and cookies.
    pub fn next_of(&mut self, entry: u32, user: UserValues<'_>, out: &mut Vec<u8>) {
        self.render(entry as usize, user, out);
    }

    /// Whether entry `entry` can be sent with these variables.
    pub fn blocked(&self, entry: u32, vars: &Vars) -> Option<Blocked> {
        self.entries.get(entry as usize).and_then(|(t, _)| t.blocked(vars))
    }

    /// Per entry: the method is HEAD.
    pub fn heads(&self) -> Vec<bool> {
        self.entries.iter().map(|(t, _)| t.head).collect()
    }
}

/// The call sites of a request's random draws: the mix choice, and the generated values (drawn in the
/// template's fixed order).
const PICK: u64 = 0;
const VALUES: u64 = 1;

fn check_value(name: &str, value: &str) -> Result<(), InvalidRequest> {
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(InvalidRequest(format!("the value of header `{name}` contains a line break or NUL")));
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(method: &str, headers: &[(&str, &str)], body: Option<&str>) -> RequestPlan {
        RequestPlan {
            method: method.into(),
            path: "/p?q=1".into(),
            headers: headers.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            body: body.map(Into::into),
            dynamic: None,
            checks: vec![],
            captures: vec![],
        }
    }

    /// A request whose path draws values: `/NAME?r=<random_int>&u=<uuid>&h=<random_hex>`.
    fn drawing(name: &str) -> Arc<Template> {
        use loadgate_model::DynamicRequest;
        let g = |index| Segment::Gen { index, encode: true };
        let t = |s: &str| Segment::Text(s.into());
        let dynamic = DynamicRequest {
            path: vec![t(&format!("/{name}?r=")), g(0), t("&u="), g(1), t("&h="), g(2)],
            headers: Vec::new(),
            body: None,
            generators: vec![
                Generator::RandomInt { min: 0, max: 1_000_000 },
                Generator::Uuid,
                Generator::RandomHex { len: 8 },
            ],
        };
        let plan = RequestPlan { dynamic: Some(dynamic), ..plan("GET", &[], None) };
        Arc::new(Template::new(&plan, "h", true).unwrap())
    }

    /// The requests of `streams` workers (or stripes), `each` requests each, sorted.
    fn sent(streams: usize, each: usize) -> Vec<Vec<u8>> {
        let templates = [drawing("a"), drawing("b")];
        let mut all = Vec::new();
        for w in 0..streams {
            let mut built = Built::new(&templates, &[3, 1], 42, w, streams).unwrap();
            for _ in 0..each {
                let mut out = Vec::new();
                built.next(&mut out);
                all.push(out);
            }
        }
        all.sort();
        all
    }

    #[test]
    fn random_values_and_mix_choices_do_not_depend_on_the_number_of_shards() {
        for workers in 1..4 {
            for per_stripe in [1, 7] {
                let one = sent(workers, 12 * per_stripe);
                // Both entries are chosen (about 3:1) and the values vary from request to request.
                let b = one.iter().filter(|r| r.starts_with(b"GET /b")).count();
                assert!(per_stripe == 1 || (b * 8 > one.len() && b * 3 < one.len()), "{b} of {} chose b", one.len());
                assert!(one.windows(2).all(|p| p[0] != p[1]), "every request draws its own values");
                for shards in [2, 3, 4, 6, 12] {
                    // Shard i's stripe of worker w is stream `w * N + i` of `W * N`, each sending its part.
                    let parts = sent(workers * shards, 12 * per_stripe / shards);
                    assert_eq!(parts, one, "{workers} workers over {shards} shards send the one-process values");
                }
            }
        }
    }

    #[test]
    fn a_generated_body_is_measured_whole_with_variables_and_cookies() {
        use loadgate_model::DynamicRequest;
        struct OneCookie;
        impl CookieHeader for OneCookie {
            fn write_header(&self, path: &[u8], out: &mut Vec<u8>) {
                if path.starts_with(b"/anything") {
                    out.extend_from_slice(b"Cookie: sid=u1\r\n");
                }
            }
        }
        let t = |s: &str| Segment::Text(s.into());
        let dynamic = DynamicRequest {
            path: vec![t("/anything/"), Segment::Var { slot: 0, encode: false }],
            headers: vec![("Authorization".into(), vec![t("Bearer "), Segment::Var { slot: 1, encode: false }])],
            body: Some(vec![t("{\"token\": \"tok-"), Segment::Gen { index: 0, encode: false }, t("\"}")]),
            generators: vec![Generator::Seq { start: 7, step: 1 }],
        };
        let plan = RequestPlan { dynamic: Some(dynamic), ..plan("POST", &[], None) };
        let template = Template::with_cookies(&plan, "h", true, true).unwrap();
        let mut vars = Vars::new(2);
        assert_eq!(template.blocked(&vars), Some(Blocked::Missing(0)));
        vars.set(0, b"1042");
        vars.set(1, b"a\r\nb");
        assert_eq!(template.blocked(&vars), Some(Blocked::Unsafe(1)));
        vars.set(1, b"tok-1");
        assert_eq!(template.blocked(&vars), None);
        let mut gens = template.generators(0, 1);
        let mut out = Vec::new();
        let user = UserValues { vars: Some(&vars), cookies: Some(&OneCookie) };
        template.render(&mut gens, &mut Rng::new(0), user, &mut out, &mut Vec::new());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /anything/1042 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok-1\r\nContent-Length: 18\r\n\
             Cookie: sid=u1\r\n\r\n{\"token\": \"tok-7\"}"
        );
    }

    #[test]
    fn serializes_in_order_with_host_length_and_close() {
        let bytes =
            serialize(&plan("PUT", &[("X-A", "1"), ("Accept", "*/*")], Some("hello")), "h:8080", false).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "PUT /p?q=1 HTTP/1.1\r\nHost: h:8080\r\nX-A: 1\r\nAccept: */*\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        );
        let bytes = serialize(&plan("GET", &[("host", "other")], None), "h", true).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), "GET /p?q=1 HTTP/1.1\r\nhost: other\r\n\r\n");
    }

    #[test]
    fn rejects_header_injection() {
        assert!(serialize(&plan("GET", &[("X", "a\r\nEvil: 1")], None), "h", true).is_err());
        assert!(serialize(&plan("GE T", &[], None), "h", true).is_err());
        assert!(serialize(&plan("GET", &[("Bad Name", "v")], None), "h", true).is_err());
    }

    #[test]
    fn slices_cover_any_offset() {
        let r = RequestBytes::new(b"abc".to_vec(), 2, false);
        assert_eq!(r.slice(0, 6), b"abcabc");
        assert_eq!(r.slice(2, 4), b"cabc");
        assert_eq!(r.slice(2, 100), b"cabcabc");
    }
}
