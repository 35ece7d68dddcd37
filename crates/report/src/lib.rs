//! loadgate-report
