//! Spec -> execution plan: matrix cells become phases, load is split exactly across workers, CPUs are assigned
//! and the plan is hashed. A pure, deterministic function.

pub mod model;

pub use model::*;
