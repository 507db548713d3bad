//! A task's input round kept in its record ([`StoredRound`]), changed atomically through
//! the store: the handler's process opens a round and closes it once its answers are
//! delivered; `tasks/update`, through any process, takes responses into it.
//!
//! The rules are the extension's: responses for keys that are not outstanding are ignored;
//! a partial set leaves the task waiting for the rest; an update for a task that waits on
//! nothing (no round, the round is complete, the task has ended) is refused.

use super::clock::now_ms;
use super::input::Answers;
use super::records::{TaskRecords, lost};
use super::round::{StoredRound, Taken};
use crate::StoreError;
use rmcp::model::{InputRequests, InputResponses};

impl TaskRecords {
    /// Records round `n` of `requests` for the working task `id`; `false` when it has
    /// ended (or is gone).
    pub(crate) fn open_round(
        &self,
        id: &str,
        n: u64,
        requests: InputRequests,
    ) -> Result<bool, StoreError> {
        let mut open = false;
        self.change(id, |record| {
            if record.status.is_terminal() {
                return false;
            }
            record.round = Some(StoredRound {
                n,
                outstanding: requests,
                answered: Answers::new(),
            });
            open = true;
            true
        })?;
        Ok(open)
    }

    /// Takes `responses` for the outstanding requests of the task `id`.
    pub(crate) fn answer(&self, id: &str, responses: InputResponses) -> Result<Taken, StoreError> {
        let mut taken = Taken::NothingWaits;
        self.change(id, |record| {
            if record.status.is_terminal() || lost(record, now_ms()) {
                return false;
            }
            let Some(round) = record.round.as_mut().filter(|round| !round.complete()) else {
                return false;
            };
            let mut count = 0;
            for (key, response) in responses {
                if let Some(_asked) = round.outstanding.remove(&key) {
                    round.answered.insert(key, response);
                    count += 1;
                }
            }
            taken = Taken::Some {
                taken: count,
                round: round.clone(),
            };
            count > 0
        })?;
        Ok(taken)
    }

    /// Removes round `n` of the task `id` from its record (its answers were delivered, or
    /// its asker went away); a later round stays.
    pub(crate) fn close_round(&self, id: &str, n: u64) -> Result<(), StoreError> {
        self.change(id, |record| {
            if record.round.as_ref().is_none_or(|round| round.n != n) {
                return false;
            }
            record.round = None;
            true
        })
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use rmcp::model::{InputRequest, JsonObject};
    use serde_json::{Value, json};
    use std::time::Duration;

    fn records() -> TaskRecords {
        let inner = std::sync::Arc::new(crate::store::StoreInner::memory(1 << 20));
        TaskRecords::new(
            Store::new(inner, crate::store::TASKS),
            Duration::from_secs(60),
        )
    }

    fn requests(keys: &[&str]) -> InputRequests {
        keys.iter()
            .map(|key| {
                let request: InputRequest =
                    serde_json::from_value(json!({ "method": "roots/list", "params": {} }))
                        .expect("a roots/list input request");
                (key.to_string(), request)
            })
            .collect()
    }

    fn responses(pairs: &[(&str, Value)]) -> InputResponses {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect()
    }

    fn working(records: &TaskRecords) -> String {
        records
            .create("asks", "local", Duration::from_secs(30))
            .expect("created")
            .0
    }

    #[test]
    fn partial_responses_wait_for_the_rest_and_unasked_keys_are_ignored() {
        let records = records();
        let id = working(&records);
        assert!(records.open_round(&id, 1, requests(&["a", "b"])).unwrap());
        let Taken::Some { taken, round } = records
            .answer(&id, responses(&[("a", json!(1)), ("zzz", json!(0))]))
            .unwrap()
        else {
            panic!("the round waits")
        };
        assert_eq!(taken, 1);
        assert!(!round.complete());
        let stored = records.get(&id).unwrap().unwrap().round.unwrap();
        assert_eq!(stored.outstanding.keys().collect::<Vec<_>>(), ["b"]);
        let Taken::Some { round, .. } = records.answer(&id, responses(&[("b", json!(2))])).unwrap()
        else {
            panic!("the round waits")
        };
        assert!(round.complete());
        assert_eq!(
            round.answered,
            responses(&[("a", json!(1)), ("b", json!(2))])
        );
        // Complete: nothing waits any more, even before the handler picked it up.
        assert_eq!(
            records.answer(&id, responses(&[("b", json!(3))])).unwrap(),
            Taken::NothingWaits
        );
    }

    #[test]
    fn an_ended_task_or_a_task_without_a_round_takes_nothing() {
        let records = records();
        let id = working(&records);
        assert_eq!(
            records.answer(&id, responses(&[("a", json!(1))])).unwrap(),
            Taken::NothingWaits
        );
        records.open_round(&id, 1, requests(&["a"])).unwrap();
        records.cancel(&id).unwrap();
        assert_eq!(records.get(&id).unwrap().unwrap().round, None);
        assert_eq!(
            records.answer(&id, responses(&[("a", json!(1))])).unwrap(),
            Taken::NothingWaits
        );
        assert!(!records.open_round(&id, 2, requests(&["b"])).unwrap());
        assert_eq!(
            records.answer("not-an-id", InputResponses::new()).unwrap(),
            Taken::NothingWaits
        );
    }

    #[test]
    fn an_update_answering_nothing_leaves_the_record_as_it_was() {
        let records = records();
        let id = working(&records);
        records.open_round(&id, 1, requests(&["a"])).unwrap();
        let before = records.get(&id).unwrap().unwrap();
        // Past the millisecond of the last write, so a rewrite would show.
        while super::now_ms() <= before.updated_ms {
            std::thread::yield_now();
        }
        let taken = records
            .answer(&id, responses(&[("zzz", json!(1))]))
            .unwrap();
        assert!(matches!(taken, Taken::Some { taken: 0, .. }), "{taken:?}");
        assert_eq!(records.get(&id).unwrap().unwrap(), before);
    }

    #[test]
    fn closing_a_round_leaves_a_later_one() {
        let records = records();
        let id = working(&records);
        records.open_round(&id, 2, requests(&["b"])).unwrap();
        records.close_round(&id, 1).unwrap();
        assert_eq!(records.get(&id).unwrap().unwrap().round.unwrap().n, 2);
        records.close_round(&id, 2).unwrap();
        assert_eq!(records.get(&id).unwrap().unwrap().round, None);
        records
            .finish(
                &id,
                super::super::records::TaskEnd::Completed(JsonObject::new()),
            )
            .unwrap();
    }
}
