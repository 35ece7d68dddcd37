//! loadgate-target
