//! Small models with known answers, for tests and benchmarks.

use stateright::{Model, Property};

/// The die-hard water jugs puzzle (3 and 5 gallon jugs). Getting exactly 4 gallons in the big
/// jug takes 6 steps at least.
#[derive(Clone, Debug, Default)]
pub struct Jugs;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum JugAction {
    FillSmall,
    FillBig,
    EmptySmall,
    EmptyBig,
    SmallToBig,
    BigToSmall,
}

impl Model for Jugs {
    type State = (u8, u8);
    type Action = JugAction;

    fn init_states(&self) -> Vec<Self::State> {
        vec![(0, 0)]
    }

    fn actions(&self, _s: &Self::State, actions: &mut Vec<Self::Action>) {
        use JugAction::*;
        actions.extend([
            FillSmall, FillBig, EmptySmall, EmptyBig, SmallToBig, BigToSmall,
        ]);
    }

    fn next_state(&self, &(small, big): &Self::State, a: Self::Action) -> Option<Self::State> {
        use JugAction::*;
        let next = match a {
            FillSmall => (3, big),
            FillBig => (small, 5),
            EmptySmall => (0, big),
            EmptyBig => (small, 0),
            SmallToBig => {
                let n = small.min(5 - big);
                (small - n, big + n)
            }
            BigToSmall => {
                let n = big.min(3 - small);
                (small + n, big - n)
            }
        };
        (next != (small, big)).then_some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("big jug never holds 4", |_, s: &(u8, u8)| s.1 != 4),
            Property::sometimes("big jug holds 4", |_, s: &(u8, u8)| s.1 == 4),
            Property::always("never overflows", |_, s: &(u8, u8)| s.0 <= 3 && s.1 <= 5),
        ]
    }
}

/// A token ring of `n` nodes, each with one bit. The holder of the token either flips its
/// bit and passes the token, or just passes it. Reachable: `n * 2^n` states. Setting all bits
/// takes `n` steps at least.
#[derive(Clone, Debug)]
pub struct TokenRing {
    pub n: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum RingAction {
    FlipAndPass,
    Pass,
}

impl Model for TokenRing {
    type State = (u8, u32);
    type Action = RingAction;

    fn init_states(&self) -> Vec<Self::State> {
        vec![(0, 0)]
    }

    fn actions(&self, _s: &Self::State, actions: &mut Vec<Self::Action>) {
        actions.push(RingAction::Pass);
        actions.push(RingAction::FlipAndPass);
    }

    fn next_state(&self, &(tok, bits): &Self::State, a: Self::Action) -> Option<Self::State> {
        let bits = match a {
            RingAction::FlipAndPass => bits ^ (1 << tok),
            RingAction::Pass => bits,
        };
        Some(((tok + 1) % self.n, bits))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("not all bits set", |m: &Self, s: &(u8, u32)| {
                s.1 != (1u32 << m.n) - 1
            }),
            Property::always("token in range", |m: &Self, s: &(u8, u32)| s.0 < m.n),
            Property::sometimes("bit 1 set alone", |_, s: &(u8, u32)| s.1 == 0b10),
        ]
    }
}

/// A 2-D grid walk with increments only, several initial states (one out of the boundary, one
/// duplicate) and a boundary `x, y <= bound`.
#[derive(Clone, Debug)]
pub struct Grid {
    pub bound: u8,
    pub inits: Vec<(u8, u8)>,
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            bound: 10,
            inits: vec![(0, 0), (2, 3), (2, 3), (20, 20), (4, 4)],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum GridAction {
    IncX,
    IncY,
}

impl Model for Grid {
    type State = (u8, u8);
    type Action = GridAction;

    fn init_states(&self) -> Vec<Self::State> {
        self.inits.clone()
    }

    fn actions(&self, _s: &Self::State, actions: &mut Vec<Self::Action>) {
        actions.push(GridAction::IncX);
        actions.push(GridAction::IncY);
    }

    fn next_state(&self, &(x, y): &Self::State, a: Self::Action) -> Option<Self::State> {
        Some(match a {
            GridAction::IncX => (x + 1, y),
            GridAction::IncY => (x, y + 1),
        })
    }

    fn within_boundary(&self, &(x, y): &Self::State) -> bool {
        x <= self.bound && y <= self.bound
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("sum below 9", |_, s: &(u8, u8)| s.0 + s.1 < 9),
            Property::sometimes("x is 7 on the axis", |_, s: &(u8, u8)| s.0 == 7 && s.1 == 0),
            Property::always("inside boundary", |m: &Self, s: &(u8, u8)| {
                s.0 <= m.bound && s.1 <= m.bound
            }),
            Property::sometimes("never", |_, _: &(u8, u8)| false),
            Property::eventually("eventually corner", |m: &Self, s: &(u8, u8)| {
                s.0 == m.bound && s.1 == m.bound
            }),
        ]
    }
}

/// `k` counters in `0..=max`; each can be incremented, decremented, or moved one unit to its
/// right neighbour (wrapping). Reachable: `(max + 1)^k` states. Used as the benchmark model.
#[derive(Clone, Debug)]
pub struct Counters {
    pub k: usize,
    pub max: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum CounterAction {
    Inc(u8),
    Dec(u8),
    Move(u8),
}

impl Model for Counters {
    type State = [u8; 8];
    type Action = CounterAction;

    fn init_states(&self) -> Vec<Self::State> {
        vec![[0; 8]]
    }

    fn actions(&self, s: &Self::State, actions: &mut Vec<Self::Action>) {
        for (i, &c) in s[..self.k].iter().enumerate() {
            if c < self.max {
                actions.push(CounterAction::Inc(i as u8));
            }
            if c > 0 {
                actions.push(CounterAction::Dec(i as u8));
                actions.push(CounterAction::Move(i as u8));
            }
        }
    }

    fn next_state(&self, s: &Self::State, a: Self::Action) -> Option<Self::State> {
        let mut n = *s;
        match a {
            CounterAction::Inc(i) => n[i as usize] += 1,
            CounterAction::Dec(i) => n[i as usize] -= 1,
            CounterAction::Move(i) => {
                let j = (i as usize + 1) % self.k;
                if n[j] == self.max {
                    return None;
                }
                n[i as usize] -= 1;
                n[j] += 1;
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("in range", |m: &Self, s: &[u8; 8]| {
                s[..m.k].iter().all(|&c| c <= m.max)
            }),
            Property::always("not all max", |m: &Self, s: &[u8; 8]| {
                s[..m.k].iter().any(|&c| c < m.max)
            }),
            Property::sometimes("first is max", |m: &Self, s: &[u8; 8]| s[0] == m.max),
        ]
    }
}

/// A pseudo-random directed graph on `nodes` nodes: node `v` has `1 + h(v) % fanout` successors
/// given by a hash of `(seed, v, i)`; some actions are disabled (`next_state` returns `None`)
/// and nodes divisible by 97 are outside the boundary. Lots of duplicate discoveries within a
/// level, for cross-checking the parallel engine against the reference one.
#[derive(Clone, Debug)]
pub struct RandomGraph {
    pub nodes: u32,
    pub fanout: u32,
    pub seed: u64,
    pub inits: Vec<u32>,
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl RandomGraph {
    fn h(&self, v: u32, i: u32) -> u64 {
        mix(self.seed ^ mix(((v as u64) << 32) | i as u64))
    }
}

impl Model for RandomGraph {
    type State = u32;
    type Action = u32;

    fn init_states(&self) -> Vec<u32> {
        self.inits.clone()
    }

    fn actions(&self, &v: &u32, actions: &mut Vec<u32>) {
        let n = 1 + (self.h(v, u32::MAX) % self.fanout as u64) as u32;
        actions.extend(0..n);
    }

    fn next_state(&self, &v: &u32, i: u32) -> Option<u32> {
        let h = self.h(v, i);
        if h.is_multiple_of(11) {
            return None;
        }
        // Mostly local edges (many joins), sometimes long jumps.
        let next = if h.is_multiple_of(5) {
            (h >> 8) % self.nodes as u64
        } else {
            (v as u64 + (h >> 8) % 7) % self.nodes as u64
        };
        Some(next as u32)
    }

    fn within_boundary(&self, &v: &u32) -> bool {
        v % 97 != 96
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("below 90%", |m, &v| v < m.nodes / 10 * 9),
            Property::always("not 12345", |_, &v| v != 12345),
            Property::sometimes("multiple of 1000 above 0", |_, &v| v > 0 && v % 1000 == 0),
            Property::always("holds", |m, &v| v < m.nodes),
        ]
    }
}
