//! Test support shared by the history tests.

pub mod postgres;
