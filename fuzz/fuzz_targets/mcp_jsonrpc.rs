#![no_main]
// A JSON-RPC message as the MCP servers read it (rmcp's client message):
// what parses serialises and parses again to the same value.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(message) = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(data) {
        let text = serde_json::to_vec(&message).expect("a parsed message serialises");
        let again: rmcp::model::ClientJsonRpcMessage = serde_json::from_slice(&text).expect("and parses again");
        assert_eq!(serde_json::to_value(&again).ok(), serde_json::to_value(&message).ok());
    }
});
