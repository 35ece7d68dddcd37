//! DWARF unwinding of a sampled user stack with framehop: one unwinder per process, built from its executable
//! file mappings (rebuilt when the mappings change), and one rule cache for all.

use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};

use crate::elf::{Bytes, Image};
use crate::maps::{AddressSpace, Backing};
use crate::raw::MappedFile;

/// The most frames taken from one stack.
pub const MAX_FRAMES: usize = 256;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
type Native = framehop::UnwinderNative<Bytes, framehop::MayAllocateDuringUnwind>;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
type Cache = framehop::CacheNative<framehop::MayAllocateDuringUnwind>;

/// The unwinder of one process and the mappings generation it was built from.
pub struct ProcessUnwinder {
    pub generation: u64,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    inner: Native,
}

/// The rule cache shared by every process's unwinder.
pub struct SharedCache {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    inner: Cache,
}

impl SharedCache {
    pub fn new() -> Self {
        SharedCache {
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            inner: Cache::new(),
        }
    }
}

fn module_info(image: &Image) -> ExplicitModuleSectionInfo<Bytes> {
    let u = &image.unwind;
    ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: u.text_svma.clone(),
        text: u.text.clone(),
        eh_frame_svma: u.eh_frame_svma.clone(),
        eh_frame: u.eh_frame.clone(),
        eh_frame_hdr_svma: u.eh_frame_hdr_svma.clone(),
        eh_frame_hdr: u.eh_frame_hdr.clone(),
        debug_frame: u.debug_frame.clone(),
        got_svma: u.got_svma.clone(),
        ..Default::default()
    }
}

impl ProcessUnwinder {
    /// An unwinder over the executable file mappings of `space`.
    pub fn build(space: &AddressSpace, files: &[MappedFile]) -> Self {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let mut inner = Native::new();
            for m in space.iter().filter(|m| m.exec) {
                let Backing::File(id) = m.backing else { continue };
                let Some(file) = files.get(id as usize) else { continue };
                let Some(image) = file.image.as_deref() else { continue };
                let Some(bias) = image.bias(m.start, m.pgoff) else { continue };
                inner.add_module(Module::new(
                    file.path.display().to_string(),
                    m.start..m.end,
                    bias,
                    module_info(image),
                ));
            }
            ProcessUnwinder { generation: space.generation, inner }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = (files, module_info);
            ProcessUnwinder { generation: space.generation }
        }
    }

    /// Unwinds from the sampled registers (in `sys::REGS_MASK` order) over the copied stack that starts at the
    /// stack pointer; pushes lookup addresses (return addresses minus one), leaf first. Stops at the end of
    /// the stack, at the first frame it cannot unwind, or at `MAX_FRAMES`.
    pub fn unwind(&self, cache: &mut SharedCache, regs: &[u64], stack: &[u8], out: &mut Vec<u64>) {
        #[cfg(target_arch = "x86_64")]
        let (pc, sp, unwind_regs) = {
            let [bp, sp, ip] = regs else { return };
            (*ip, *sp, framehop::x86_64::UnwindRegsX86_64::new(*ip, *sp, *bp))
        };
        #[cfg(target_arch = "aarch64")]
        let (pc, sp, unwind_regs) = {
            let [fp, lr, sp, pc] = regs else { return };
            (*pc, *sp, framehop::aarch64::UnwindRegsAarch64::new(*lr, *sp, *fp))
        };
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let mut read = |addr: u64| -> Result<u64, ()> {
                let off = addr.checked_sub(sp).ok_or(())? as usize;
                let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
                Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
            };
            let mut frames = self.inner.iter_frames(pc, unwind_regs, &mut cache.inner, &mut read);
            while out.len() < MAX_FRAMES {
                match frames.next() {
                    Ok(Some(f)) => out.push(f.address_for_lookup()),
                    _ => break,
                }
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = (cache, regs, stack, out);
        }
    }
}
