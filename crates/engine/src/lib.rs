//! loadgate-engine
