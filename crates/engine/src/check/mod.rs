//! Response checks (issue 30).

pub(crate) mod json;
