//! Process limits a load run runs into.

/// Raises the soft open-file limit to the hard one (16,384 connections need more than the usual 1,024) and
/// returns the limit in force, or `None` when it cannot be read.
pub fn raise_open_file_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    Some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_limit_is_known_and_not_lowered() {
        let first = super::raise_open_file_limit().expect("getrlimit works on Linux");
        let second = super::raise_open_file_limit().expect("getrlimit works on Linux");
        assert!(first > 0);
        assert_eq!(first, second);
    }
}
