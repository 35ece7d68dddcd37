//! A process's address space as the sampler saw it: mappings from `/proc/PID/maps` at attach time and from
//! mmap2 records after. Pure: no system calls.

use std::collections::BTreeMap;

/// What a mapping maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A file, by its index in the sampler's file table.
    File(u32),
    /// Anonymous memory (JIT code is found through `/tmp/perf-PID.map`).
    Anon,
}

/// One mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub exec: bool,
    pub backing: Backing,
}

impl Mapping {
    /// The file offset of `addr` (inside the mapping).
    pub fn offset_of(&self, addr: u64) -> u64 {
        addr.wrapping_sub(self.start).wrapping_add(self.pgoff)
    }
}

/// The mappings of one process, non-overlapping, by start address.
#[derive(Clone, Debug, Default)]
pub struct AddressSpace {
    maps: BTreeMap<u64, Mapping>,
    /// Counts changes, so an unwinder built from the mappings knows when to rebuild.
    pub generation: u64,
}

impl AddressSpace {
    /// Adds a mapping; whatever it overlaps is cut away (a new mmap replaces what was there).
    pub fn insert(&mut self, m: Mapping) {
        if m.end <= m.start {
            return;
        }
        let overlapping: Vec<u64> =
            self.maps.range(..m.end).rev().take_while(|(_, old)| old.end > m.start).map(|(&s, _)| s).collect();
        for s in overlapping {
            let Some(old) = self.maps.remove(&s) else { continue };
            if old.start < m.start {
                self.maps.insert(old.start, Mapping { end: m.start, ..old });
            }
            if old.end > m.end {
                let pgoff = old.pgoff.wrapping_add(m.end - old.start);
                self.maps.insert(m.end, Mapping { start: m.end, pgoff, ..old });
            }
        }
        self.maps.insert(m.start, m);
        self.generation += 1;
    }

    /// The mapping holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let (_, m) = self.maps.range(..=addr).next_back()?;
        (addr < m.end).then_some(m)
    }

    /// Forgets every mapping (an `exec` replaced the image).
    pub fn clear(&mut self) {
        self.maps.clear();
        self.generation += 1;
    }

    /// The mappings in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Mapping> {
        self.maps.values()
    }
}

/// One line of `/proc/PID/maps`: `start-end perms offset dev inode path`.
#[derive(Debug, PartialEq)]
pub struct MapsLine<'a> {
    pub start: u64,
    pub end: u64,
    pub exec: bool,
    pub pgoff: u64,
    /// `(major << 32) | minor`, and the inode.
    pub dev_ino: (u64, u64),
    pub path: &'a str,
}

/// Parses a line of `/proc/PID/maps` (`None` for a line it cannot read).
pub fn parse_maps_line(line: &str) -> Option<MapsLine<'_>> {
    let mut it = line.splitn(6, ' ');
    let (start, end) = it.next()?.split_once('-')?;
    let perms = it.next()?;
    let pgoff = u64::from_str_radix(it.next()?, 16).ok()?;
    let (maj, min) = it.next()?.split_once(':')?;
    let ino: u64 = it.next()?.parse().ok()?;
    let path = it.next().unwrap_or("").trim_start();
    Some(MapsLine {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        exec: perms.as_bytes().get(2) == Some(&b'x'),
        pgoff,
        dev_ino: ((u64::from_str_radix(maj, 16).ok()? << 32) | u64::from_str_radix(min, 16).ok()?, ino),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, file: u32) -> Mapping {
        Mapping { start, end, pgoff, exec: true, backing: Backing::File(file) }
    }

    #[test]
    fn an_address_is_found_in_the_mapping_that_holds_it_and_nowhere_else() {
        let mut a = AddressSpace::default();
        a.insert(m(0x1000, 0x2000, 0, 1));
        a.insert(m(0x3000, 0x4000, 0x1000, 2));
        assert_eq!(a.find(0x1fff).map(|m| m.backing), Some(Backing::File(1)));
        assert_eq!(a.find(0x2000), None);
        assert_eq!(a.find(0x3500).map(|m| m.offset_of(0x3500)), Some(0x1500));
    }

    #[test]
    fn a_new_mapping_cuts_the_old_one_it_overlaps_and_keeps_the_rest_with_offsets() {
        let mut a = AddressSpace::default();
        a.insert(m(0x1000, 0x5000, 0, 1));
        a.insert(m(0x2000, 0x3000, 0, 2));
        let all: Vec<_> = a.iter().copied().collect();
        assert_eq!(all, vec![m(0x1000, 0x2000, 0, 1), m(0x2000, 0x3000, 0, 2), m(0x3000, 0x5000, 0x2000, 1)]);
    }

    #[test]
    fn a_maps_line_gives_range_permissions_offset_device_inode_and_path() {
        let l = parse_maps_line("55d0c0a00000-55d0c0a21000 r-xp 00001000 fd:01 1234   /usr/bin/x y").unwrap();
        assert_eq!(
            l,
            MapsLine {
                start: 0x55d0c0a00000,
                end: 0x55d0c0a21000,
                exec: true,
                pgoff: 0x1000,
                dev_ino: ((0xfd << 32) | 1, 1234),
                path: "/usr/bin/x y",
            }
        );
        assert_eq!(parse_maps_line("7fff-8000 rw-p 0 00:00 0").map(|l| l.path), Some(""));
        assert_eq!(parse_maps_line("garbage"), None);
    }
}
