//! Spec -> execution plan: matrix cells become phases, load is split exactly across workers, CPUs are assigned
//! and the plan is hashed. A pure, deterministic function: [`compile`].

mod compile;
mod display;
pub mod model;
mod shard;
mod shard_command;
pub mod verify;

pub use compile::{compile, plan_hash, split_even, split_weighted};
pub use display::describe_load;
pub use model::*;
pub use shard::{shard, ShardError};
pub use shard_command::{ShardCommand, ShardOptions, ShardPlace};
