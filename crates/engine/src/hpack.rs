//! HPACK (RFC 7541): a full decoder of header blocks and an encoder of request fields.
//!
//! # Decoder
//!
//! [`Decoder`] keeps the connection's dynamic table (section 2.3.2): literals with incremental indexing insert at
//! the front, entries are evicted from the back when the table's size (each entry's name and value lengths plus
//! 32) would pass its maximum, and a dynamic table size update (section 6.3) changes that maximum within the size
//! the client announced in `SETTINGS_HEADER_TABLE_SIZE` ([`Decoder::announced_table_size`]). An update is only
//! valid at the start of a block. Strings may be Huffman-coded (appendix B): they are decoded four bits at a time
//! through a table built once per process from the canonical code's lengths, and a padding longer than 7 bits,
//! padding that is not the EOS prefix, or an EOS in the string is an error (section 5.2).
//!
//! Each field is handed to a callback, borrowed ([`Field`]); nothing is allocated for a field that only refers to
//! a table entry, and the decoder's scratch buffers are reused between blocks. A block whose fields add up to more
//! than the header list limit (`SETTINGS_MAX_HEADER_LIST_SIZE`'s measure: name + value + 32 per field) is still
//! decoded to its end, so the dynamic table stays in step with the server's, but the fields past the limit are
//! not handed out and the block ends in [`HpackError::HeaderListTooLarge`]: a stream error, whereas every other
//! error is a connection's COMPRESSION_ERROR ([`HpackError::is_compression_error`]); after one the decoder's
//! table can no longer be trusted.
//!
//! # Encoder
//!
//! [`encode_field`] writes a request field as the static table's index when the name and value are there,
//! otherwise as a literal without indexing (or never indexed), naming the static table's entry when the name is
//! there; string literals are Huffman-coded when that is shorter ([`Huffman::Shorter`]). Nothing is inserted into
//! the server's dynamic table (the engine's `h2` module has its own inserting encoder for static requests).

use std::collections::VecDeque;
use std::sync::OnceLock;

use thiserror::Error;

/// The static table (appendix A), index 1 first.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The length in bits of each symbol's Huffman code (appendix B), symbols 0 to 255 and EOS (256). The code is
/// canonical: codes of one length are consecutive in symbol order, and each length's first code follows the
/// previous length's last, so the lengths alone determine it.
#[rustfmt::skip]
const HUFFMAN_LENGTHS: [u8; 257] = [
    // 0-31: control characters.
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    // ' ' ! " # $ % & ' ( ) * + , - . /
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    // 0-9 : ; < = > ?
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    // @ A-O
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    // P-Z [ \ ] ^ _
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    // ` a-o
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    // p-z { | } ~ DEL
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    // 128-255.
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    // EOS.
    30,
];

const EOS: u16 = 256;

/// The canonical codes: (code, length) per symbol.
fn huffman_codes() -> &'static [(u32, u8); 257] {
    static CODES: OnceLock<[(u32, u8); 257]> = OnceLock::new();
    CODES.get_or_init(|| {
        let mut codes = [(0u32, 0u8); 257];
        let mut code = 0u32;
        for len in 1..=30u8 {
            for (sym, &l) in HUFFMAN_LENGTHS.iter().enumerate() {
                if l == len {
                    codes[sym] = (code, len);
                    code += 1;
                }
            }
            code <<= 1;
        }
        codes
    })
}

/// One step of the nibble decoder, packed in a `u32`: from a state (a node of the code tree), four bits lead to
/// the state in bits 0-7, having completed the symbol in bits 8-15 when bit [`EMIT`] is set, or failed (an EOS)
/// when bit [`FAIL`] is set.
const EMIT: u32 = 1 << 16;
const FAIL: u32 = 1 << 17;

/// The decoder's tables: 256 states (the tree's internal nodes) x 16 nibbles, flat, and whether ending in a state
/// is a valid padding (the state lies on the all-ones path, at most 7 bits from the root).
struct HuffmanTable {
    steps: Box<[u32]>,
    accepting: Box<[bool]>,
}

fn huffman_table() -> &'static HuffmanTable {
    static TABLE: OnceLock<HuffmanTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The tree: an internal node's two children, a leaf as `-(symbol + 1)`.
        let mut tree: Vec<[i32; 2]> = vec![[0, 0]];
        for (sym, &(code, len)) in huffman_codes().iter().enumerate() {
            let mut node = 0usize;
            for i in (0..len).rev() {
                let bit = ((code >> i) & 1) as usize;
                if i == 0 {
                    tree[node][bit] = -(sym as i32 + 1);
                } else {
                    if tree[node][bit] == 0 {
                        tree.push([0, 0]);
                        tree[node][bit] = (tree.len() - 1) as i32;
                    }
                    node = tree[node][bit] as usize;
                }
            }
        }
        let mut ones_depth: Vec<Option<u8>> = vec![None; tree.len()];
        ones_depth[0] = Some(0);
        let mut node = 0usize;
        let mut depth = 0u8;
        while tree[node][1] > 0 {
            node = tree[node][1] as usize;
            depth += 1;
            ones_depth[node] = Some(depth);
        }
        let mut steps = vec![0u32; tree.len() * 16];
        for state in 0..tree.len() {
            for nibble in 0..16 {
                let mut cur = state;
                let mut step = 0u32;
                for i in (0..4).rev() {
                    let child = tree[cur][(nibble >> i) & 1];
                    if child < 0 {
                        let sym = (-child - 1) as u32;
                        // At most one symbol ends in four bits (the shortest code has five).
                        if sym == u32::from(EOS) || step & EMIT != 0 {
                            step |= FAIL;
                        }
                        step |= EMIT | ((sym & 0xff) << 8);
                        cur = 0;
                    } else {
                        cur = child as usize;
                    }
                }
                steps[state * 16 + nibble] = step | cur as u32;
            }
        }
        let steps = steps.into_boxed_slice();
        let accepting = ones_depth.iter().map(|d| matches!(d, Some(d) if *d <= 7)).collect();
        HuffmanTable { steps, accepting }
    })
}

/// Decodes a Huffman-coded string, appending to `out`.
pub fn huffman_decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let t = huffman_table();
    let mut state = 0usize;
    out.reserve(src.len() * 8 / 5 + 1);
    for &b in src {
        for nibble in [b >> 4, b & 0xf] {
            let step = t.steps[(state << 4) | usize::from(nibble)];
            if step & FAIL != 0 {
                return Err(HpackError::Huffman);
            }
            if step & EMIT != 0 {
                out.push((step >> 8) as u8);
            }
            state = (step & 0xff) as usize;
        }
    }
    if t.accepting[state] {
        Ok(())
    } else {
        Err(HpackError::Huffman)
    }
}

/// The length of `s` Huffman-coded.
pub fn huffman_len(s: &[u8]) -> usize {
    let codes = huffman_codes();
    let bits: usize = s.iter().map(|&b| usize::from(codes[usize::from(b)].1)).sum();
    bits.div_ceil(8)
}

/// Appends `s` Huffman-coded, padded with the EOS prefix.
pub fn huffman_encode(s: &[u8], out: &mut Vec<u8>) {
    let codes = huffman_codes();
    let mut acc = 0u64;
    let mut have = 0u32;
    for &b in s {
        let (code, len) = codes[usize::from(b)];
        acc = (acc << len) | u64::from(code);
        have += u32::from(len);
        while have >= 8 {
            have -= 8;
            out.push((acc >> have) as u8);
        }
        acc &= (1u64 << have) - 1;
    }
    if have > 0 {
        out.push(((acc << (8 - have)) | ((1u64 << (8 - have)) - 1)) as u8);
    }
}

/// A header block that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HpackError {
    #[error("a header block ends inside a field")]
    Truncated,
    #[error("an HPACK integer is too large")]
    IntegerOverflow,
    #[error("an HPACK index {0} is not in the tables")]
    BadIndex(usize),
    #[error("a Huffman-coded string is malformed (an EOS, or padding that is too long or not all ones)")]
    Huffman,
    #[error("a dynamic table size update to {size} bytes, over the {max} announced")]
    TableSizeTooLarge { size: usize, max: usize },
    #[error("a dynamic table size update after the first field of a block")]
    LateTableSizeUpdate,
    #[error("a header list over {limit} bytes")]
    HeaderListTooLarge { limit: usize },
}

impl HpackError {
    /// Whether this is a connection error of type COMPRESSION_ERROR (everything but a header list over its limit,
    /// which fails only its stream).
    pub fn is_compression_error(&self) -> bool {
        !matches!(self, HpackError::HeaderListTooLarge { .. })
    }
}

/// A decoded field, borrowed until the callback returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    /// Sent as never indexed (section 6.2.3): an intermediary must keep it literal.
    pub never_indexed: bool,
}

/// The size of an entry, as the dynamic table and the header list limit count it (section 4.1).
pub fn field_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// A dynamic table entry: name and value.
type Entry = (Box<[u8]>, Box<[u8]>);

/// Fields decoded into owned bytes: (name, value).
pub type OwnedFields = Vec<(Vec<u8>, Vec<u8>)>;

/// The dynamic table, newest entry first.
#[derive(Debug, Clone, Default)]
struct DynamicTable {
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
}

impl DynamicTable {
    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            match self.entries.pop_back() {
                Some((n, v)) => self.size -= field_size(&n, &v),
                None => break,
            }
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = field_size(name, value);
        if size > self.max {
            // Larger than the whole table: the table empties (section 4.4).
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max - size);
        self.entries.push_front((name.into(), value.into()));
        self.size += size;
    }
}

/// Reads an integer with an `n`-bit prefix at `b[*at]`, moving `at` past it (section 5.1). Values up to 2^32.
fn get_int(b: &[u8], at: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1usize << n) - 1;
    let first = usize::from(*b.get(*at).ok_or(HpackError::Truncated)?) & max;
    *at += 1;
    if first < max {
        return Ok(first);
    }
    let mut value = max;
    for shift in (0..).step_by(7) {
        let byte = *b.get(*at).ok_or(HpackError::Truncated)?;
        *at += 1;
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
        value += usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return if value > u32::MAX as usize { Err(HpackError::IntegerOverflow) } else { Ok(value) };
        }
    }
    Err(HpackError::IntegerOverflow)
}

/// Reads a string literal at `b[*at]` into `out` (cleared first).
fn get_string(b: &[u8], at: &mut usize, out: &mut Vec<u8>) -> Result<(), HpackError> {
    let huffman = b.get(*at).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = get_int(b, at, 7)?;
    let end = at.checked_add(len).ok_or(HpackError::Truncated)?;
    let s = b.get(*at..end).ok_or(HpackError::Truncated)?;
    *at = end;
    out.clear();
    if huffman {
        huffman_decode(s, out)
    } else {
        out.extend_from_slice(s);
        Ok(())
    }
}

/// A connection's HPACK decoder. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Decoder {
    table: DynamicTable,
    announced: usize,
    max_list: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder for a connection whose client announced `announced_table_size` (`SETTINGS_HEADER_TABLE_SIZE`;
    /// HTTP/2's default is 4,096) and takes header lists up to `max_header_list` bytes.
    pub fn new(announced_table_size: usize, max_header_list: usize) -> Decoder {
        Decoder {
            table: DynamicTable { max: announced_table_size, ..DynamicTable::default() },
            announced: announced_table_size,
            max_list: max_header_list,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The table size to announce in `SETTINGS_HEADER_TABLE_SIZE`.
    pub fn announced_table_size(&self) -> usize {
        self.announced
    }

    /// The dynamic table's current size (section 4.1) and its current maximum.
    pub fn table_size(&self) -> (usize, usize) {
        (self.table.size, self.table.max)
    }

    /// The dynamic table's entries, newest (index 62) first.
    pub fn table_entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.table.entries.iter().map(|(n, v)| (&n[..], &v[..]))
    }

    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError::BadIndex(0)),
            1..=61 => Ok(STATIC[index - 1]),
            _ => self.table.entries.get(index - 62).map(|(n, v)| (&n[..], &v[..])).ok_or(HpackError::BadIndex(index)),
        }
    }

    /// Decodes one complete header block (the HEADERS frame's fragment and its CONTINUATIONs, joined), handing
    /// each field to `sink` in order.
    pub fn decode(&mut self, block: &[u8], sink: &mut impl FnMut(Field<'_>)) -> Result<(), HpackError> {
        let mut at = 0;
        let mut list = 0usize;
        let mut over = false;
        let mut fields = 0usize;
        while let Some(&b) = block.get(at) {
            if b & 0xe0 == 0x20 {
                // A dynamic table size update.
                if fields > 0 {
                    return Err(HpackError::LateTableSizeUpdate);
                }
                let size = get_int(block, &mut at, 5)?;
                if size > self.announced {
                    return Err(HpackError::TableSizeTooLarge { size, max: self.announced });
                }
                self.table.max = size;
                self.table.evict_to(size);
                continue;
            }
            fields += 1;
            if b & 0x80 != 0 {
                let index = get_int(block, &mut at, 7)?;
                let (name, value) = self.entry(index)?;
                list = list.saturating_add(field_size(name, value));
                over |= list > self.max_list;
                if !over {
                    sink(Field { name, value, never_indexed: false });
                }
                continue;
            }
            // A literal: with incremental indexing (6-bit index), without indexing (4 bits, 0000) or never
            // indexed (4 bits, 0001).
            let (prefix, insert, never_indexed) =
                if b & 0xc0 == 0x40 { (6, true, false) } else { (4, false, b & 0xf0 == 0x10) };
            let index = get_int(block, &mut at, prefix)?;
            let mut name = std::mem::take(&mut self.name);
            let mut value = std::mem::take(&mut self.value);
            let read = (|| {
                if index == 0 {
                    get_string(block, &mut at, &mut name)?;
                } else {
                    let (n, _) = self.entry(index)?;
                    name.clear();
                    name.extend_from_slice(n);
                }
                get_string(block, &mut at, &mut value)
            })();
            if read.is_ok() {
                list = list.saturating_add(field_size(&name, &value));
                over |= list > self.max_list;
                if !over {
                    sink(Field { name: &name, value: &value, never_indexed });
                }
                if insert {
                    self.table.insert(&name, &value);
                }
            }
            self.name = name;
            self.value = value;
            read?;
        }
        if over {
            Err(HpackError::HeaderListTooLarge { limit: self.max_list })
        } else {
            Ok(())
        }
    }

    /// Decodes a block into owned fields (for tests and rare paths; the worker uses [`Decoder::decode`]).
    pub fn decode_to_vec(&mut self, block: &[u8]) -> Result<OwnedFields, HpackError> {
        let mut out = Vec::new();
        self.decode(block, &mut |f| out.push((f.name.to_vec(), f.value.to_vec())))?;
        Ok(out)
    }
}

/// An integer with an `n`-bit prefix whose first byte's high bits are `first` (section 5.1).
pub fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Whether string literals are Huffman-coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Huffman {
    Never,
    /// When the coded string is shorter.
    Shorter,
}

/// Appends a string literal.
pub fn put_string(out: &mut Vec<u8>, s: &[u8], huffman: Huffman) {
    let coded = huffman_len(s);
    if huffman == Huffman::Shorter && coded < s.len() {
        put_int(out, 0x80, 7, coded);
        huffman_encode(s, out);
    } else {
        put_int(out, 0, 7, s.len());
        out.extend_from_slice(s);
    }
}

/// Appends a dynamic table size update (section 6.3): at the start of a block only.
pub fn put_table_size_update(out: &mut Vec<u8>, size: usize) {
    put_int(out, 0x20, 5, size);
}

/// The static table's index of `name` with `value` (exact) or of `name` alone.
fn static_index(name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut by_name = None;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if *n == name {
            if *v == value {
                return (Some(i + 1), by_name.or(Some(i + 1)));
            }
            by_name = by_name.or(Some(i + 1));
        }
    }
    (None, by_name)
}

/// Appends one field (its name already lowercase, as HTTP/2 wants): the static table's index when it holds the
/// field, otherwise a literal not indexed (`never_indexed`: never indexed, for credentials).
pub fn encode_field(out: &mut Vec<u8>, name: &[u8], value: &[u8], never_indexed: bool, huffman: Huffman) {
    let (exact, by_name) = static_index(name, value);
    if let (Some(i), false) = (exact, never_indexed) {
        put_int(out, 0x80, 7, i);
        return;
    }
    let first = if never_indexed { 0x10 } else { 0x00 };
    match by_name {
        Some(i) => put_int(out, first, 4, i),
        None => {
            put_int(out, first, 4, 0);
            put_string(out, name, huffman);
        }
    }
    put_string(out, value, huffman);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    type Fields = OwnedFields;

    fn fields(list: &[(&str, &str)]) -> Fields {
        list.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    }

    /// One block of an appendix C example: its bytes, the fields and the table size after it.
    struct Step<'a> {
        hex: &'a str,
        fields: &'a [(&'a str, &'a str)],
        table_size: usize,
    }

    const REQ1: &[(&str, &str)] =
        &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")];
    const REQ2: &[(&str, &str)] = &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ];
    const REQ3: &[(&str, &str)] = &[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ];
    const RESP1: &[(&str, &str)] = &[
        (":status", "302"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ];
    const RESP2: &[(&str, &str)] = &[
        (":status", "307"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ];
    const RESP3: &[(&str, &str)] = &[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
        ("location", "https://www.example.com"),
        ("content-encoding", "gzip"),
        ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
    ];

    /// Runs one example's blocks on one decoder; returns the decoder.
    fn run(table: usize, steps: &[Step<'_>]) -> Decoder {
        let mut d = Decoder::new(table, 1 << 20);
        for s in steps {
            assert_eq!(d.decode_to_vec(&hex(s.hex)).unwrap(), fields(s.fields), "{}", s.hex);
            assert_eq!(d.table_size().0, s.table_size, "{}", s.hex);
        }
        d
    }

    #[test]
    fn rfc_7541_c2_literal_field_representations_decode() {
        let d = run(
            4096,
            &[Step {
                hex: "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
                fields: &[("custom-key", "custom-header")],
                table_size: 55,
            }],
        );
        assert_eq!(d.table_entries().collect::<Vec<_>>(), [(&b"custom-key"[..], &b"custom-header"[..])]);
        run(4096, &[Step { hex: "040c2f73616d706c652f70617468", fields: &[(":path", "/sample/path")], table_size: 0 }]);
        let mut d = Decoder::new(4096, 1 << 20);
        let mut never = Vec::new();
        d.decode(&hex("100870617373776f726406736563726574"), &mut |f| {
            never.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed))
        })
        .unwrap();
        assert_eq!(never, [(b"password".to_vec(), b"secret".to_vec(), true)]);
        assert_eq!(d.table_size().0, 0);
        run(4096, &[Step { hex: "82", fields: &[(":method", "GET")], table_size: 0 }]);
    }

    #[test]
    fn rfc_7541_c3_requests_without_huffman_decode_with_the_dynamic_table() {
        let d = run(
            4096,
            &[
                Step { hex: "828684410f7777772e6578616d706c652e636f6d", fields: REQ1, table_size: 57 },
                Step { hex: "828684be58086e6f2d6361636865", fields: REQ2, table_size: 110 },
                Step {
                    hex: "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
                    fields: REQ3,
                    table_size: 164,
                },
            ],
        );
        let names: Vec<_> = d.table_entries().map(|(n, _)| n.to_vec()).collect();
        assert_eq!(names, [b"custom-key".to_vec(), b"cache-control".to_vec(), b":authority".to_vec()]);
    }

    #[test]
    fn rfc_7541_c4_requests_with_huffman_decode() {
        run(
            4096,
            &[
                Step { hex: "828684418cf1e3c2e5f23a6ba0ab90f4ff", fields: REQ1, table_size: 57 },
                Step { hex: "828684be5886a8eb10649cbf", fields: REQ2, table_size: 110 },
                Step { hex: "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf", fields: REQ3, table_size: 164 },
            ],
        );
    }

    #[test]
    fn rfc_7541_c5_responses_without_huffman_evict_from_a_256_byte_table() {
        let d = run(256, &[
            Step {
                hex: "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
                fields: RESP1,
                table_size: 222,
            },
            Step { hex: "4803333037c1c0bf", fields: RESP2, table_size: 222 },
            Step {
                hex: "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
                fields: RESP3,
                table_size: 215,
            },
        ]);
        let names: Vec<_> = d.table_entries().map(|(n, _)| n.to_vec()).collect();
        assert_eq!(names, [b"set-cookie".to_vec(), b"content-encoding".to_vec(), b"date".to_vec()]);
    }

    #[test]
    fn rfc_7541_c6_responses_with_huffman_evict_from_a_256_byte_table() {
        run(256, &[
            Step {
                hex: "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
                fields: RESP1,
                table_size: 222,
            },
            Step { hex: "4883640effc1c0bf", fields: RESP2, table_size: 222 },
            Step {
                hex: "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
                fields: RESP3,
                table_size: 215,
            },
        ]);
    }

    #[test]
    fn rfc_7541_c1_integers_encode_as_the_examples() {
        let mut out = Vec::new();
        put_int(&mut out, 0, 5, 10);
        put_int(&mut out, 0, 5, 1337);
        put_int(&mut out, 0, 8, 42);
        assert_eq!(out, [0x0a, 0x1f, 0x9a, 0x0a, 0x2a]);
        let mut at = 1;
        assert_eq!(get_int(&out, &mut at, 5), Ok(1337));
        assert_eq!(at, 4);
    }

    #[test]
    fn the_huffman_code_agrees_with_loona_hpack_for_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let mut coded = Vec::new();
        huffman_encode(&all, &mut coded);
        assert_eq!(coded.len(), huffman_len(&all));
        let theirs = loona_hpack::huffman::HuffmanDecoder::new().decode(&coded).unwrap();
        assert_eq!(theirs, all);
        let mut ours = Vec::new();
        huffman_decode(&coded, &mut ours).unwrap();
        assert_eq!(ours, all);
        // The RFC's example: "www.example.com" is f1e3 c2e5 f23a 6ba0 ab90 f4ff.
        let mut out = Vec::new();
        huffman_encode(b"www.example.com", &mut out);
        assert_eq!(out, hex("f1e3c2e5f23a6ba0ab90f4ff"));
    }

    #[test]
    fn the_static_table_agrees_with_loona_hpack() {
        let mut theirs = loona_hpack::Decoder::new();
        for i in 1..=61u8 {
            let got = theirs.decode(&[0x80 | i]).unwrap();
            assert_eq!((got[0].0.as_slice(), got[0].1.as_slice()), STATIC[usize::from(i) - 1], "index {i}");
        }
    }

    #[test]
    fn huffman_padding_longer_than_7_bits_or_not_ones_or_an_eos_is_an_error() {
        let mut out = Vec::new();
        // "a" is 00011, padded with 111: 0x1f. Padded with 0s instead: 0x18.
        assert_eq!(huffman_decode(&[0x1f], &mut out), Ok(()));
        assert_eq!(huffman_decode(&[0x18], &mut out), Err(HpackError::Huffman));
        // A whole byte of padding after "a".
        assert_eq!(huffman_decode(&[0x1f, 0xff], &mut out), Err(HpackError::Huffman));
        // EOS (30 ones) then padding.
        assert_eq!(huffman_decode(&[0xff, 0xff, 0xff, 0xff], &mut out), Err(HpackError::Huffman));
    }

    #[test]
    fn a_table_size_update_is_bounded_by_the_announced_size_and_evicts() {
        let mut d = Decoder::new(4096, 1 << 20);
        d.decode_to_vec(&hex("400a637573746f6d2d6b65790d637573746f6d2d686561646572")).unwrap();
        let mut up = Vec::new();
        put_table_size_update(&mut up, 0);
        put_table_size_update(&mut up, 100);
        up.push(0x82);
        assert_eq!(d.decode_to_vec(&up).unwrap(), fields(&[(":method", "GET")]));
        assert_eq!(d.table_size(), (0, 100));
        let mut big = Vec::new();
        put_table_size_update(&mut big, 4097);
        assert_eq!(d.decode_to_vec(&big), Err(HpackError::TableSizeTooLarge { size: 4097, max: 4096 }));
        assert_eq!(Decoder::new(4096, 1 << 20).decode_to_vec(&[0x82, 0x20]), Err(HpackError::LateTableSizeUpdate));
    }

    #[test]
    fn indexes_outside_the_tables_and_truncated_blocks_are_compression_errors() {
        let mut d = Decoder::new(4096, 1 << 20);
        assert_eq!(d.decode_to_vec(&[0x80]), Err(HpackError::BadIndex(0)));
        assert_eq!(d.decode_to_vec(&[0xbe]), Err(HpackError::BadIndex(62)));
        assert_eq!(d.decode_to_vec(&[0x40, 0x05, b'a']), Err(HpackError::Truncated));
        assert_eq!(d.decode_to_vec(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]), Err(HpackError::IntegerOverflow));
        assert!(HpackError::Truncated.is_compression_error());
    }

    #[test]
    fn a_header_list_over_the_limit_fails_its_stream_but_keeps_the_table_in_step() {
        let mut d = Decoder::new(4096, 60);
        let block = hex("828684410f7777772e6578616d706c652e636f6d");
        let e = d.decode_to_vec(&block).unwrap_err();
        assert_eq!(e, HpackError::HeaderListTooLarge { limit: 60 });
        assert!(!e.is_compression_error());
        // The :authority literal was still inserted.
        assert_eq!(d.table_size().0, 57);
    }

    #[test]
    fn the_encoder_writes_what_the_decoder_and_loona_hpack_read_back() {
        let list: &[(&[u8], &[u8])] = &[
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", b"/helloworld.Greeter/SayHello"),
            (b":authority", b"localhost:50051"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            (b"grpc-timeout", b"1500m"),
            (b"authorization", b"Bearer secret"),
        ];
        for huffman in [Huffman::Never, Huffman::Shorter] {
            let mut out = Vec::new();
            for (n, v) in list {
                encode_field(&mut out, n, v, *n == b"authorization", huffman);
            }
            let want: Fields = list.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
            assert_eq!(Decoder::new(4096, 1 << 20).decode_to_vec(&out).unwrap(), want);
            let theirs = loona_hpack::Decoder::new().decode(&out).unwrap();
            assert_eq!(theirs, want);
        }
        let mut out = Vec::new();
        encode_field(&mut out, b":method", b"POST", false, Huffman::Shorter);
        assert_eq!(out, [0x83]);
    }

    #[test]
    fn blocks_from_gos_hpack_encoder_decode_with_reuse_eviction_and_never_indexed() {
        // tests/data/hpack/go-hpack.txt: written by golang.org/x/net/http2/hpack's encoder (gen/main.go).
        let text = include_str!("../tests/data/hpack/go-hpack.txt");
        let mut d = Decoder::new(4096, 1 << 16);
        let mut blocks = 0;
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let block = hex(line.strip_prefix("block ").expect("a block line"));
            let mut want = Vec::new();
            while let Some(f) = lines.next_if(|l| l.starts_with("field ")) {
                let mut parts = f["field ".len()..].split('\t');
                let (n, v, never) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
                want.push((n.as_bytes().to_vec(), v.as_bytes().to_vec(), never == "true"));
            }
            let mut got = Vec::new();
            d.decode(&block, &mut |f| got.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed))).unwrap();
            assert_eq!(got, want, "block {blocks}");
            blocks += 1;
        }
        assert_eq!(blocks, 6);
        // The size update to 256 evicted everything older than the long entry and the last block's fields.
        assert_eq!(d.table_size().1, 256);
    }

    proptest! {
        #[test]
        fn random_blocks_never_panic(blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..6)) {
            let mut d = Decoder::new(256, 1024);
            for b in &blocks {
                let _ = d.decode(b, &mut |f| assert!(f.name.len() + f.value.len() <= 1024));
                let (size, max) = d.table_size();
                prop_assert!(size <= max && max <= 256);
            }
        }

        #[test]
        fn corrupted_rfc_blocks_never_panic_and_keep_the_table_within_its_size(at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
            let blocks = [
                "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
                "4883640effc1c0bf",
                "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
            ];
            let mut d = Decoder::new(256, 1 << 16);
            for (i, b) in blocks.iter().enumerate() {
                let mut b = hex(b);
                if i == at % 3 {
                    let n = b.len();
                    b[at % n] = byte;
                    b.truncate(cut % (n + 1));
                }
                let _ = d.decode(&b, &mut |_| ());
                let (size, max) = d.table_size();
                prop_assert!(size <= max && max <= 256);
            }
        }

        #[test]
        fn huffman_round_trips_any_bytes(s in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut coded = Vec::new();
            huffman_encode(&s, &mut coded);
            prop_assert_eq!(coded.len(), huffman_len(&s));
            let mut back = Vec::new();
            prop_assert_eq!(huffman_decode(&coded, &mut back), Ok(()));
            prop_assert_eq!(back, s);
        }

        #[test]
        fn random_huffman_strings_never_panic(s in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut out = Vec::new();
            let _ = huffman_decode(&s, &mut out);
            prop_assert!(out.len() <= s.len() * 8 / 5 + 1);
        }
    }
}
