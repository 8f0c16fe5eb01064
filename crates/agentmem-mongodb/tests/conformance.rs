//! The agentmem conformance suite against `MONGODB_URL`
//! (default `mongodb://127.0.0.1:27017/?directConnection=true`; SecantusDB in CI: transactions,
//! no text indexes, so compaction runs in transactions and search uses the BM25 fallback).

mod common;

agentmem_testkit::conformance_tests!(common::conformance_store);
