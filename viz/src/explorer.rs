//! trc's model for stateright's Explorer (`trc explore`): [`ExploreModel`] shows readable steps
//! without touching the model crate: actions in words with the packet they refer to
//! (`trc_trace::event_text`) and, for each step, a one-line summary of the next state before its
//! full `Debug` text.

use crate::graph::fmt_ssthresh;
use stateright::{Model, Property};
use trc_model::model::{Action, State, TcpModel};

/// `TcpModel` with Explorer-friendly formatting. Same states, actions and properties.
pub struct ExploreModel(pub TcpModel);

/// stateright properties are plain `fn` pointers: one monomorphised forwarder per catalogue slot.
fn forward<const I: usize>(m: &ExploreModel, s: &State) -> bool {
    (m.0.properties[I].condition)(&m.0, s)
}
/// A property's condition, as stateright takes it.
pub type Cond = fn(&ExploreModel, &State) -> bool;
/// The most properties the Explorer takes at once.
pub const FORWARD: [Cond; 24] = [
    forward::<0>,
    forward::<1>,
    forward::<2>,
    forward::<3>,
    forward::<4>,
    forward::<5>,
    forward::<6>,
    forward::<7>,
    forward::<8>,
    forward::<9>,
    forward::<10>,
    forward::<11>,
    forward::<12>,
    forward::<13>,
    forward::<14>,
    forward::<15>,
    forward::<16>,
    forward::<17>,
    forward::<18>,
    forward::<19>,
    forward::<20>,
    forward::<21>,
    forward::<22>,
    forward::<23>,
];

/// One line: the fields the graph labels show, plus the flight.
pub fn summary(s: &State) -> String {
    let x = &s.sender;
    let flight: Vec<String> = s
        .flight
        .iter()
        .map(|p| {
            format!(
                "{}{}@{}",
                p.seg as u32 + 1,
                if p.rtx { "r" } else { "" },
                p.sent
            )
        })
        .collect();
    format!(
        "t={}ms {:?} cwnd {} ssthresh {} snd_una {} snd_nxt {} high_seq {} out/sacked/lost/retrans {}/{}/{}/{} flight [{}]",
        s.now,
        x.ca_state,
        x.cwnd,
        fmt_ssthresh(x.ssthresh),
        x.snd_una,
        x.snd_nxt,
        x.high_seq,
        x.packets_out,
        x.sacked_out,
        x.lost_out,
        x.retrans_out,
        flight.join(" ")
    )
}

impl Model for ExploreModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        self.0.init_states()
    }
    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        self.0.actions(s, actions)
    }
    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        self.0.next_state(s, a)
    }
    fn properties(&self) -> Vec<Property<Self>> {
        self.0
            .properties
            .iter()
            .zip(FORWARD)
            .map(|(p, condition)| Property {
                expectation: p.expectation.clone(),
                name: p.name,
                condition,
            })
            .collect()
    }
    fn within_boundary(&self, s: &State) -> bool {
        self.0.within_boundary(s)
    }
    fn format_action(&self, a: &Action) -> String {
        a.to_string()
    }
    fn format_step(&self, last: &State, a: Action) -> Option<String> {
        let next = self.0.next_state(last, a)?;
        Some(format!(
            "{}\n⇒ {}\n\n{next:#?}",
            trc_trace::event_text(last, &a),
            summary(&next)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trc_model::Config;

    #[test]
    fn wrapper_forwards_every_property_and_formats_steps() {
        let specs = trc_properties::catalogue();
        assert!(specs.len() <= FORWARD.len(), "grow FORWARD");
        let inner = TcpModel::new(
            Config::default(),
            trc_model::Profile::by_name("linux-6.15").unwrap(),
        )
        .with_properties(trc_properties::properties(&specs));
        let m = ExploreModel(inner.clone());
        let s = &m.init_states()[0];
        let props = m.properties();
        assert_eq!(props.len(), specs.len());
        for (p, q) in props.iter().zip(inner.properties()) {
            assert_eq!(p.name, q.name);
            assert_eq!((p.condition)(&m, s), (q.condition)(&inner, s));
        }
        let mut acts = Vec::new();
        m.actions(s, &mut acts);
        let step = m.format_step(s, acts[0]).unwrap();
        assert!(
            step.starts_with("deliver seg 1 (original, sent at 0 ms)") && step.contains("⇒ t=50ms"),
            "{step}"
        );
    }
}
