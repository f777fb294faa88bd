//! svc
