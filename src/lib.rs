//! agentmem facade.
