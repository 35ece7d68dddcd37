//! The transport boundary: how a worker opens a byte stream to the target.
//!
//! The connection driver only needs `AsyncRead + AsyncWrite + Unpin`; plain TCP is the one transport today.
//! An HTTPS backend would add a `connect` that wraps the TCP stream in TLS and return its stream type here.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A connected stream to the target.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Stream for T {}

/// Why a connect failed.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// No local port or address was available (`EADDRNOTAVAIL`): ephemeral ports ran out, usually to TIME_WAIT.
    AddressUnavailable,
    TimedOut,
    Other(io::Error),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::AddressUnavailable => f.write_str("no local address or port available (EADDRNOTAVAIL)"),
            ConnectError::TimedOut => f.write_str("connect timed out"),
            ConnectError::Other(e) => write!(f, "{e}"),
        }
    }
}

/// Opens a TCP connection with `TCP_NODELAY` set.
pub(crate) async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ConnectError> {
    let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Err(_) => return Err(ConnectError::TimedOut),
        Ok(Err(e)) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => return Err(ConnectError::AddressUnavailable),
        Ok(Err(e)) => return Err(ConnectError::Other(e)),
        Ok(Ok(s)) => s,
    };
    stream.set_nodelay(true).map_err(ConnectError::Other)?;
    Ok(stream)
}
