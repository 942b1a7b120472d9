//! Visual stream: axum server with the web viewer and the 30 Hz WebSocket frames.
