//! What the sampler and the symbolizer read from an ELF file: its loadable segments (file offset -> address),
//! the unwind sections framehop needs, its build id and `.gnu_debuglink`, and its function symbols. Files are
//! read through `object`'s read cache (only the parts asked for), never mapped, so a file replaced on disk while
//! open cannot fault the reader; a malformed file is an error, never a panic.

use std::fs::File;
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::elf::PT_LOAD;
use object::read::elf::{ElfFile64, ProgramHeader};
use object::read::ReadCache;
use object::{Endianness, Object, ObjectSection, ObjectSymbol, ReadRef, SymbolKind};

/// Shared immutable bytes (a section's data), as framehop's `Deref<Target = [u8]>`.
#[derive(Clone, Debug, Default)]
pub struct Bytes(pub Arc<[u8]>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A `PT_LOAD` segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    /// Executable (`PF_X`).
    pub exec: bool,
}

/// The unwind sections of an image (addresses are the file's own, SVMAs).
#[derive(Clone, Debug, Default)]
pub struct UnwindSections {
    pub text_svma: Option<Range<u64>>,
    pub text: Option<Bytes>,
    pub eh_frame_svma: Option<Range<u64>>,
    pub eh_frame: Option<Bytes>,
    pub eh_frame_hdr_svma: Option<Range<u64>>,
    pub eh_frame_hdr: Option<Bytes>,
    pub debug_frame: Option<Bytes>,
    pub got_svma: Option<Range<u64>>,
}

/// The parts of an ELF image the sampler keeps.
#[derive(Clone, Debug, Default)]
pub struct Image {
    pub segments: Vec<Segment>,
    pub build_id: Option<Vec<u8>>,
    pub debuglink: Option<Vec<u8>>,
    pub unwind: UnwindSections,
}

/// The largest `.text` copied for framehop's prologue/epilogue analysis (bigger ones unwind without it).
const TEXT_LIMIT: u64 = 64 << 20;

impl Image {
    /// Reads an open file's image.
    pub fn read_file(file: &File) -> Result<Image, object::Error> {
        let cache = ReadCache::new(file);
        Image::parse(&cache)
    }

    /// Reads an image held in memory (the vDSO).
    pub fn read_bytes(data: &[u8]) -> Result<Image, object::Error> {
        Image::parse(data)
    }

    fn parse<'d, R: ReadRef<'d>>(data: R) -> Result<Image, object::Error> {
        let elf = ElfFile64::<Endianness, R>::parse(data)?;
        let endian = elf.endian();
        let segments = elf
            .elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == PT_LOAD)
            .map(|ph| Segment {
                offset: ph.p_offset(endian),
                vaddr: ph.p_vaddr(endian),
                filesz: ph.p_filesz(endian),
                exec: ph.p_flags(endian) & object::elf::PF_X != 0,
            })
            .collect();
        let section = |name: &str, limit: u64| -> (Option<Range<u64>>, Option<Bytes>) {
            match elf.section_by_name(name) {
                Some(s) => {
                    let range = s.address()..s.address().saturating_add(s.size());
                    let data = (s.size() <= limit)
                        .then(|| s.uncompressed_data().ok())
                        .flatten()
                        .map(|d| Bytes(Arc::from(&*d)));
                    (Some(range), data)
                }
                None => (None, None),
            }
        };
        let (text_svma, text) = section(".text", TEXT_LIMIT);
        let (eh_frame_svma, eh_frame) = section(".eh_frame", u64::MAX);
        let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr", u64::MAX);
        let (_, debug_frame) = section(".debug_frame", u64::MAX);
        let (got_svma, _) = section(".got", 0);
        Ok(Image {
            segments,
            build_id: elf.build_id().ok().flatten().map(<[u8]>::to_vec),
            debuglink: elf.gnu_debuglink().ok().flatten().map(|(name, _)| name.to_vec()),
            unwind: UnwindSections {
                text_svma,
                text,
                eh_frame_svma,
                eh_frame,
                eh_frame_hdr_svma,
                eh_frame_hdr,
                debug_frame,
                got_svma,
            },
        })
    }

    /// The load bias of an executable mapping of this image that starts at `start` with file offset `pgoff`:
    /// the address of a byte in memory minus its address in the file (`None` when no segment is mapped there).
    /// The segment is the executable one whose page-aligned file range holds `pgoff` (a page may also hold the
    /// end of the segment before it, which the kernel maps elsewhere), else the last one that holds it.
    pub fn bias(&self, start: u64, pgoff: u64) -> Option<u64> {
        const PAGE: u64 = 4096;
        let holds = |s: &&Segment| s.offset & !(PAGE - 1) <= pgoff && pgoff < s.offset.saturating_add(s.filesz.max(1));
        let seg = self
            .segments
            .iter()
            .filter(holds)
            .find(|s| s.exec)
            .or_else(|| self.segments.iter().rev().find(|s| holds(s)))?;
        // avma(o) = start + (o - pgoff) and svma(o) = vaddr + (o - offset) for any offset o of the segment.
        Some(start.wrapping_sub(pgoff).wrapping_add(seg.offset).wrapping_sub(seg.vaddr))
    }

    /// The file's own address (SVMA) of a byte at file offset `offset`.
    pub fn svma(&self, offset: u64) -> Option<u64> {
        let seg = self.segments.iter().find(|s| s.offset <= offset && offset < s.offset.saturating_add(s.filesz))?;
        Some(seg.vaddr.wrapping_add(offset - seg.offset))
    }
}

/// Function symbols sorted by address.
#[derive(Debug, Default)]
pub struct Symbols {
    /// (address, size, index into `names`).
    entries: Vec<(u64, u64, u32)>,
    names: Vec<String>,
}

impl Symbols {
    /// Adds the function symbols of `.symtab` and `.dynsym` of an open file.
    pub fn add_file(&mut self, file: &File) -> Result<(), object::Error> {
        let cache = ReadCache::new(file);
        self.add(&cache)
    }

    /// Adds the function symbols of an image in memory.
    pub fn add_bytes(&mut self, data: &[u8]) -> Result<(), object::Error> {
        self.add(data)
    }

    fn add<'d, R: ReadRef<'d>>(&mut self, data: R) -> Result<(), object::Error> {
        let elf = ElfFile64::<Endianness, R>::parse(data)?;
        for sym in elf.symbols().chain(elf.dynamic_symbols()) {
            if sym.kind() != SymbolKind::Text || sym.address() == 0 || sym.is_undefined() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            self.entries.push((sym.address(), sym.size(), self.names.len() as u32));
            self.names.push(name.to_owned());
        }
        Ok(())
    }

    /// Sorts the table (call after the last `add`); among symbols at one address, the sized one first.
    pub fn finish(&mut self) {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        self.entries.dedup_by_key(|e| e.0);
    }

    /// The (mangled) name of the function holding `svma`: the nearest symbol at or below it whose size covers
    /// it, or a size-0 symbol when it is the nearest.
    pub fn lookup(&self, svma: u64) -> Option<&str> {
        let i = self.entries.partition_point(|e| e.0 <= svma).checked_sub(1)?;
        let (addr, size, name) = self.entries[i];
        if size == 0 || svma < addr.saturating_add(size) {
            self.names.get(name as usize).map(String::as_str)
        } else {
            None
        }
    }
}

/// Where a separate debug file for `binary` may be (in order): the build-id path under each debug folder, then
/// the `.gnu_debuglink` name beside the binary, in its `.debug` folder and under each debug folder + its folder.
pub fn debug_candidates(binary: &Path, image: &Image, debug_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(id) = image.build_id.as_deref().filter(|id| id.len() >= 2) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        for d in debug_dirs {
            out.push(d.join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..])));
        }
    }
    if let Some(link) = image.debuglink.as_deref() {
        let name = String::from_utf8_lossy(link).into_owned();
        if !name.contains('/') && !name.is_empty() {
            let dir = binary.parent().unwrap_or(Path::new("/"));
            out.push(dir.join(&name));
            out.push(dir.join(".debug").join(&name));
            let rel = dir.strip_prefix("/").unwrap_or(dir);
            for d in debug_dirs {
                out.push(d.join(rel).join(&name));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(segments: Vec<Segment>) -> Image {
        Image { segments, ..Image::default() }
    }

    #[test]
    fn the_bias_of_a_pie_text_mapping_is_its_start_minus_the_segment_address() {
        let img = image(vec![
            Segment { offset: 0, vaddr: 0, filesz: 0x1000, exec: false },
            Segment { offset: 0x1000, vaddr: 0x1000, filesz: 0x5000, exec: true },
        ]);
        assert_eq!(img.bias(0x5555_0000_1000, 0x1000), Some(0x5555_0000_0000));
        assert_eq!(img.svma(0x1234), Some(0x1234));
        assert_eq!(img.svma(0x9000), None);
    }

    #[test]
    fn a_non_pie_executable_has_a_zero_bias() {
        let img = image(vec![Segment { offset: 0x1000, vaddr: 0x401000, filesz: 0x2000, exec: true }]);
        assert_eq!(img.bias(0x401000, 0x1000), Some(0));
    }

    #[test]
    fn a_text_segment_that_shares_its_first_page_with_the_one_before_takes_the_bias_of_the_text() {
        // As rustc's PIE executables lay them out: text at offset 0x16970, address 0x17970.
        let img = image(vec![
            Segment { offset: 0, vaddr: 0, filesz: 0x16970, exec: false },
            Segment { offset: 0x16970, vaddr: 0x17970, filesz: 0x30000, exec: true },
        ]);
        let start = 0x5555_5556_b000;
        assert_eq!(img.bias(start, 0x16000), Some(start - 0x17000));
        assert_eq!(img.svma(0x16e52), Some(0x17e52));
    }

    #[test]
    fn a_lookup_finds_the_covering_symbol_and_nothing_past_its_end() {
        let mut s = Symbols { entries: vec![(0x100, 0x10, 0), (0x200, 0, 1)], names: vec!["a".into(), "b".into()] };
        s.finish();
        assert_eq!(s.lookup(0x105), Some("a"));
        assert_eq!(s.lookup(0x110), None);
        assert_eq!(s.lookup(0x250), Some("b"));
        assert_eq!(s.lookup(0x50), None);
    }

    #[test]
    fn debug_files_are_looked_for_by_build_id_then_by_debuglink() {
        let img =
            Image { build_id: Some(vec![0xab, 0xcd, 0xef]), debuglink: Some(b"x.debug".to_vec()), ..Image::default() };
        let c = debug_candidates(Path::new("/usr/bin/x"), &img, &[PathBuf::from("/usr/lib/debug")]);
        assert_eq!(
            c,
            vec![
                PathBuf::from("/usr/lib/debug/.build-id/ab/cdef.debug"),
                PathBuf::from("/usr/bin/x.debug"),
                PathBuf::from("/usr/bin/.debug/x.debug"),
                PathBuf::from("/usr/lib/debug/usr/bin/x.debug"),
            ]
        );
    }
}
