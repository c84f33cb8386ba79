// Package companion is the agent of one persona in a room: it keeps a
// bounded history, turns every message into a State with its brain (and a
// draft of what it would say), and when the floor grants it the turn, a
// turn (turn.go) waits the configured pause, speaks through its device (a
// speak query) and publishes its Message once the speak result is back, as
// aikyo does. The companion keeps the loop and the vote (companion.go);
// each of its other concerns has a file named for it.
//
// Closing follows aikyo-closing: the brain says the stage; the repetition
// judge adds the closing instruction to the brain's input when the last
// Window messages repeat; MaxTurn forces terminal; a message from a user
// (anyone not on the room's roster) restarts a rested room. A brain that
// ignores the instruction CloseAsks times (a stubborn model: it answers
// closing none and says the same again) has its stage moved on by the
// companion, one stage a State (pre-closing, closing, terminal); at that
// terminal the companion listens until a user speaks. The State that goes
// terminal is logged once with what ended it: the model, the repetition
// judge or max_turn.
//
// # Repetition judge
//
// Two judges, as the seed's enableRepetitionJudge and a local fallback:
// the companion's own model (Config.Judge) is asked whether the last window
// repeats itself, even in other words — at most once every JudgeEvery
// messages, on a goroutine of its own, never on the way of a State or a
// turn; its latest verdict holds until the next one or a user's message.
// The local score (runtime/repetition: character bigrams, which catch only
// near-verbatim repeats) is always computed; the instruction is added when
// either is above Threshold, so while the model has not answered, is slow
// (JudgeTimeout) or fails, the local score decides alone.
//
// # At least once
//
// Every message may arrive twice and any one may be lost (docs/protocol.md,
// "Delivery"). A Message seen twice is handled once. A grant acts once: a
// grant for a message this companion already answered makes it publish the
// same answer again (the floor repeats a grant until it hears the answer,
// so a lost grant and a lost answer are both recovered), and a grant for a
// message older than its newest spoken turn is ignored; both are counted.
// Its State is sent again every ResendEvery until a grant for that
// message is seen that counts it or names a speaker (a lost State), while
// the message is younger than ResendFor: however long the floor could not
// hear (a broker node lost with the floor's connection), the vote reaches
// it once it is back.
//
// # Concurrency
//
// One goroutine (Run) owns the companion's state, its turn's too. Brain
// calls and speaking run on goroutines Run starts and waits for; every wait
// has a timeout.
// Publishes go through an outbox, so the loop never waits on the network.
package companion
