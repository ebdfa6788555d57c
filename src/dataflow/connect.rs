//! Cluster mode's connections, made before timely starts: each process connects to the
//! processes listed before it and accepts the ones listed after, with timely's handshake (the
//! connecting process writes its index, a big-endian u64), retrying every 10 ms. Timely's own
//! loop sleeps a whole second whenever a peer is not there yet, and processes started together
//! always met that second: it was a third of a two-second run.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// How often a missing peer is tried again.
const RETRY: Duration = Duration::from_millis(10);

/// One stream per process (`None` for this one), in process order: the form timely's
/// `initialize_networking_from_sockets` takes. Gives up after `patience` without every peer.
pub fn sockets(
    addresses: &[String],
    me: usize,
    patience: Duration,
) -> io::Result<Vec<Option<TcpStream>>> {
    let deadline = Instant::now() + patience;
    let listener = TcpListener::bind(&addresses[me])?;
    listener.set_nonblocking(true)?;
    let mut streams: Vec<Option<TcpStream>> = (0..addresses.len()).map(|_| None).collect();
    // Connect to the processes before this one (they accept), accept the ones after (they
    // connect), interleaved so that two processes never wait on each other.
    let mut pending_connect: Vec<usize> = (0..me).collect();
    while pending_connect.len() + streams[me + 1..].iter().filter(|s| s.is_none()).count() > 0 {
        let mut progressed = false;
        pending_connect.retain(|&peer| match TcpStream::connect(&addresses[peer]) {
            Ok(mut stream) => {
                let ok = stream
                    .set_nodelay(true)
                    .and_then(|_| stream.write_all(&(me as u64).to_be_bytes()));
                if ok.is_err() {
                    return true;
                }
                streams[peer] = Some(stream);
                progressed = true;
                false
            }
            Err(_) => true,
        });
        loop {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false)?;
                    stream.set_nodelay(true)?;
                    let mut index = [0u8; 8];
                    stream.read_exact(&mut index)?;
                    let peer = u64::from_be_bytes(index) as usize;
                    if peer <= me || peer >= addresses.len() {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("a connection claimed to be process {peer}"),
                        ));
                    }
                    streams[peer] = Some(stream);
                    progressed = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if Instant::now() > deadline {
            let missing: Vec<usize> =
                (0..addresses.len()).filter(|&p| p != me && streams[p].is_none()).collect();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("processes {missing:?} did not connect within {patience:?}"),
            ));
        }
        if !progressed {
            std::thread::sleep(RETRY);
        }
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_processes_connect_in_milliseconds_whatever_order_they_start_in() {
        let ports: Vec<u16> = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port())
            .collect();
        let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let started = Instant::now();
        // The last process first: it cannot reach the others yet.
        let threads: Vec<_> = (0..3)
            .rev()
            .map(|me| {
                let addresses = addresses.clone();
                std::thread::sleep(Duration::from_millis(30));
                std::thread::spawn(move || {
                    sockets(&addresses, me, Duration::from_secs(10)).unwrap()
                })
            })
            .collect();
        let all: Vec<Vec<Option<TcpStream>>> =
            threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(started.elapsed() < Duration::from_millis(900), "took {:?}", started.elapsed());
        for (i, streams) in all.iter().rev().enumerate() {
            for (j, s) in streams.iter().enumerate() {
                assert_eq!(s.is_some(), i != j, "process {i}'s stream to {j}");
            }
        }
    }
}
