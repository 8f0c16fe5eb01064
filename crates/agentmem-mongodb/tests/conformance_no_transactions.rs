//! The agentmem conformance suite against `MONGODB_URL` with transactions turned off,
//! as on a standalone MongoDB: compaction and `save_session` use the epoch switch.

mod common;

agentmem_testkit::conformance_tests!(common::no_transaction_store);
