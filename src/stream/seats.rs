//! Seats for WebSocket clients: at most `max_clients` at once, anonymous (read-only)
//! viewers capped per remote address and per web origin, and a seat for the holder of
//! the control token that no anonymous client can take: when the server is full, a
//! client that proves the token takes the seat of the oldest anonymous viewer, who is
//! told why and closed.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, watch};

/// How many clients may sit at once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeatLimits {
    /// All clients.
    pub total: usize,
    /// Anonymous viewers from one remote address.
    pub per_address: usize,
    /// Anonymous viewers from one web origin.
    pub per_origin: usize,
}

/// Why a client got no seat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoSeat {
    /// Every seat is taken.
    Full(usize),
    /// Its address already has its share of anonymous viewers.
    Address(usize),
    /// Its origin already has its share of anonymous viewers.
    Origin(usize),
    /// Every seat is held by a controlling client: none can be given up.
    AllControllers(usize),
}

impl std::fmt::Display for NoSeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoSeat::Full(n) => write!(f, "server is full ({n} clients)"),
            NoSeat::Address(n) => {
                write!(f, "server is full for this address ({n} read-only viewers)")
            }
            NoSeat::Origin(n) => {
                write!(f, "server is full for this origin ({n} read-only viewers)")
            }
            NoSeat::AllControllers(n) => {
                write!(
                    f,
                    "server is full ({n} clients, all with the control token)"
                )
            }
        }
    }
}

struct Occupant {
    address: IpAddr,
    origin: Option<String>,
    controller: bool,
    evict: Option<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Table {
    next: u64,
    /// By arrival: the first key is the oldest.
    occupants: BTreeMap<u64, Occupant>,
}

/// The seats of one server.
pub(crate) struct Seats {
    limits: SeatLimits,
    table: Mutex<Table>,
    count: watch::Sender<usize>,
}

/// One client's seat, given back when dropped.
pub(crate) struct Seat {
    id: u64,
    seats: Arc<Seats>,
    evicted: Option<oneshot::Receiver<()>>,
}

/// Resolves when a controller took the seat it came from ([`Seat::eviction`]).
pub(crate) struct Eviction(Option<oneshot::Receiver<()>>);

impl Eviction {
    /// Waits until the seat is taken by a controller; never resolves otherwise.
    pub(crate) async fn wait(self) {
        let evicted = match self.0 {
            Some(evicted) => evicted.await.is_ok(),
            None => false,
        };
        if !evicted {
            std::future::pending::<()>().await;
        }
    }
}

impl Seats {
    pub(crate) fn new(limits: SeatLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            table: Mutex::default(),
            count: watch::channel(0).0,
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Clients seated now.
    pub(crate) fn count(&self) -> usize {
        *self.count.borrow()
    }

    /// Waits until every seat is given back.
    pub(crate) async fn all_empty(&self) {
        let mut count = self.count.subscribe();
        let _ = count.wait_for(|n| *n == 0).await;
    }

    /// A seat for an anonymous viewer, within the total and its address's and origin's
    /// shares.
    pub(crate) fn take_viewer(
        self: &Arc<Self>,
        address: IpAddr,
        origin: Option<String>,
    ) -> Result<Seat, NoSeat> {
        let mut table = self.table();
        let l = self.limits;
        if table.occupants.len() >= l.total {
            return Err(NoSeat::Full(l.total));
        }
        let anonymous = || table.occupants.values().filter(|o| !o.controller);
        if anonymous().filter(|o| o.address == address).count() >= l.per_address {
            return Err(NoSeat::Address(l.per_address));
        }
        if origin.is_some() && anonymous().filter(|o| o.origin == origin).count() >= l.per_origin {
            return Err(NoSeat::Origin(l.per_origin));
        }
        Ok(self.seat(&mut table, address, origin, false))
    }

    /// A seat for a client that proved the token: a free one, else the oldest anonymous
    /// viewer's, who is evicted.
    pub(crate) fn take_controller(
        self: &Arc<Self>,
        address: IpAddr,
        origin: Option<String>,
    ) -> Result<Seat, NoSeat> {
        let mut table = self.table();
        if table.occupants.len() >= self.limits.total {
            let oldest = table
                .occupants
                .iter()
                .find(|(_, o)| !o.controller)
                .map(|(id, _)| *id)
                .ok_or(NoSeat::AllControllers(self.limits.total))?;
            if let Some(mut evicted) = table.occupants.remove(&oldest) {
                if let Some(tell) = evicted.evict.take() {
                    let _ = tell.send(());
                }
            }
        }
        Ok(self.seat(&mut table, address, origin, true))
    }

    fn seat(
        self: &Arc<Self>,
        table: &mut Table,
        address: IpAddr,
        origin: Option<String>,
        controller: bool,
    ) -> Seat {
        let id = table.next;
        table.next += 1;
        let (tell, evicted) = oneshot::channel();
        table.occupants.insert(
            id,
            Occupant {
                address,
                origin,
                controller,
                evict: Some(tell),
            },
        );
        self.count.send_replace(table.occupants.len());
        Seat {
            id,
            seats: self.clone(),
            evicted: Some(evicted),
        }
    }
}

impl Seat {
    /// Marks this seat's client as holding the control token: it is no longer evicted
    /// for a controller, nor counted in its address's and origin's anonymous shares.
    pub(crate) fn promote(&self) {
        if let Some(o) = self.seats.table().occupants.get_mut(&self.id) {
            o.controller = true;
        }
    }

    /// The seat's eviction notice (once; later calls get one that never resolves).
    pub(crate) fn eviction(&mut self) -> Eviction {
        Eviction(self.evicted.take())
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut table = self.seats.table();
        table.occupants.remove(&self.id);
        self.seats.count.send_replace(table.occupants.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SeatLimits {
        SeatLimits {
            total: 4,
            per_address: 3,
            per_origin: 2,
        }
    }

    #[test]
    fn anonymous_viewers_are_capped_per_address_and_origin_and_overall() {
        let seats = Seats::new(limits());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let site = Some("http://viewer.example".to_string());
        let _a1 = seats.take_viewer(a, None).unwrap();
        let _a2 = seats.take_viewer(a, site.clone()).unwrap();
        let _a3 = seats.take_viewer(a, None).unwrap();
        assert_eq!(seats.take_viewer(a, None).err(), Some(NoSeat::Address(3)));
        let b1 = seats.take_viewer(b, site.clone()).unwrap();
        assert_eq!(seats.count(), 4);
        assert_eq!(seats.take_viewer(b, None).err(), Some(NoSeat::Full(4)));
        drop(b1);
        let _b2 = seats.take_viewer(b, site.clone()).unwrap();
        assert_eq!(seats.count(), 4);
    }

    #[tokio::test]
    async fn a_controller_takes_the_oldest_anonymous_seat_and_is_never_evicted() {
        let seats = Seats::new(limits());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let mut oldest = seats.take_viewer(a, None).unwrap();
        let promoted = seats.take_viewer(b, None).unwrap();
        promoted.promote();
        let _rest: Vec<Seat> = (0..2)
            .map(|_| seats.take_viewer(b, None).unwrap())
            .collect();
        let mut controller = seats.take_controller(a, None).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(1), oldest.eviction().wait())
            .await
            .expect("the oldest anonymous viewer is evicted");
        assert_eq!(seats.count(), 4);
        drop(oldest);
        assert_eq!(seats.count(), 4, "an evicted seat is already given back");
        let _second = seats.take_controller(a, None).unwrap();
        let _third = seats.take_controller(a, None).unwrap();
        assert_eq!(
            seats.take_controller(a, None).err(),
            Some(NoSeat::AllControllers(4))
        );
        assert!(
            tokio::time::timeout(
                std::time::Duration::from_millis(50),
                controller.eviction().wait()
            )
            .await
            .is_err(),
            "controllers keep their seats"
        );
    }
}
