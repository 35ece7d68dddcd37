//! Reading the files a spec names (the spec itself, data files, TLS files): regular files only, never more than a
//! bound. A FIFO would block the reader forever, `/dev/zero` never ends, and `/proc/self/environ` holds the
//! process environment: none of them is read.

use std::io::Read as _;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    Io(std::io::Error),
    /// Not a regular file: what it is (`a directory`, `a FIFO`, ...).
    NotRegular(&'static str),
    /// A file of the kernel's (`/proc`, `/sys`): its size says nothing of what reading it gives.
    Kernel,
    /// Longer than the bound: its size when the file says it.
    TooLarge(Option<u64>),
}

impl ReadError {
    /// The message and the fix, for the file named `name`, which may be `max` bytes long.
    pub(crate) fn explain(&self, name: &str, max: u64, what: &str) -> (String, String) {
        use crate::limits::human_bytes;
        match self {
            ReadError::Io(e) => (format!("cannot read `{name}`: {e}"), "check the path and its permissions".to_owned()),
            ReadError::NotRegular(kind) => {
                (format!("`{name}` is {kind}, not a regular file"), format!("{what} is a regular file"))
            }
            ReadError::Kernel => (
                format!("`{name}` is a file of the kernel (/proc or /sys), not a regular file"),
                format!("{what} is a regular file"),
            ),
            ReadError::TooLarge(Some(size)) => (
                format!("`{name}` is {}, more than the {} it may be", human_bytes(*size), human_bytes(max)),
                String::new(),
            ),
            ReadError::TooLarge(None) => {
                (format!("`{name}` is longer than the {} it may be", human_bytes(max)), String::new())
            }
        }
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// What a file that is not a regular file is, in words.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// Reads the regular file at `path` (symbolic links followed), at most `max` bytes of it. A FIFO, a device, a
/// socket or a directory is refused before it is opened, and opening never waits (`O_NONBLOCK`), in case the
/// file changed in between; a file of `/proc` or `/sys` is refused once opened. Never reads more than
/// `max + 1` bytes.
pub(crate) fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind(&meta)));
    }
    let handle = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = handle.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind(&meta)));
    }
    if of_the_kernel(&handle) {
        return Err(ReadError::Kernel);
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge(Some(meta.len())));
    }
    let mut bytes = Vec::new();
    (&handle).take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge(None));
    }
    // A regular file gives what its size says; one that gives more is made up as it is read.
    if bytes.len() as u64 > meta.len() {
        return Err(ReadError::Kernel);
    }
    Ok(bytes)
}

/// Whether an open file lives on one of the kernel's own file systems (procfs, sysfs and the like), whose files
/// are made up as they are read.
#[cfg(target_os = "linux")]
fn of_the_kernel(handle: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd as _;
    const KERNEL_FILE_SYSTEMS: &[u32] = &[
        0x9fa0,      // proc
        0x6265_6572, // sysfs
        0x6462_6720, // debugfs
        0x7472_6163, // tracefs
        0x7363_6673, // securityfs
        0x0027_e0eb, // cgroup
        0x6367_7270, // cgroup2
        0x6265_6570, // configfs
        0xde5e_81e4, // efivarfs
        0xcafe_4a11, // bpf
        0x6165_676c, // pstore
    ];
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `fstatfs` writes a `statfs` into the buffer it is given, which is large enough, and reads nothing
    // else; the descriptor is open for the duration of the call.
    let ok = unsafe { libc::fstatfs(handle.as_raw_fd(), st.as_mut_ptr()) } == 0;
    if !ok {
        return false;
    }
    // SAFETY: `fstatfs` succeeded, so it initialised the buffer.
    let st = unsafe { st.assume_init() };
    // The magic numbers are 32 bits; `f_type` is wider or signed on some targets.
    #[expect(clippy::unnecessary_cast, reason = "`f_type`'s type differs between targets")]
    let magic = (st.f_type as i64 as u64 & 0xffff_ffff) as u32;
    KERNEL_FILE_SYSTEMS.contains(&magic)
}

#[cfg(not(target_os = "linux"))]
fn of_the_kernel(_: &std::fs::File) -> bool {
    false
}

/// The first `max` bytes of the regular file at `path` as text (invalid UTF-8 replaced), for telling what a file
/// is that could not be read whole; `None` when it is not a regular file or cannot be read.
pub fn head(path: &Path, max: usize) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let handle =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).ok()?;
    if !handle.metadata().ok()?.is_file() || of_the_kernel(&handle) {
        return None;
    }
    let mut bytes = Vec::new();
    (&handle).take(max as u64).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_never_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_regular(&file, 5).unwrap(), b"hello");
        assert!(matches!(read_regular(&file, 4), Err(ReadError::TooLarge(Some(5)))));
        assert!(matches!(read_regular(dir.path(), 5), Err(ReadError::NotRegular("a directory"))));
        assert!(matches!(read_regular(Path::new("/dev/zero"), 5), Err(ReadError::NotRegular("a character device"))));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid, NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_regular(&fifo, 5), Err(ReadError::NotRegular("a FIFO (named pipe)"))));
        let link = dir.path().join("environ");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        assert!(matches!(read_regular(&link, 1 << 20), Err(ReadError::Kernel)));
        assert_eq!(head(&file, 2).as_deref(), Some("he"));
        assert_eq!(head(&fifo, 2), None);
    }
}
