//! A directory of the process's own for working files.

use std::path::{Path, PathBuf};

/// A directory of our own under the system's temporary directory (0700), removed when dropped: where `--out -`
/// runs keep their working files, where `repro` rebuilds a spec, where a run from flags keeps the spec its local
/// shards read (its credential headers are in it).
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new() -> std::io::Result<ScratchDir> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static MADE: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos());
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("loadgate-{}-{}-{n}", std::process::id(), nanos.unwrap_or(0)));
        // Made here, only this user's (a directory that is already there, someone else's perhaps, is an error).
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&dir)?;
        Ok(ScratchDir(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
