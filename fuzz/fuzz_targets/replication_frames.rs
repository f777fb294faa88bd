#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = svc_core::fuzzing::replication_frames(data);
});
