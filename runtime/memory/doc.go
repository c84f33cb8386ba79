// Package memory is a companion's long-term memory on the robot (issue 29;
// docs/memory.md): atomic facts about people ("name is Alice", "likes
// green tea"), kept in one file per companion in a directory (the device's
// systemd StateDirectory), recalled into a prompt as facts, and forgotten
// by rule, with the bytes erased from disk.
//
// It imports nothing of the conversation runtime; of Chorus it uses only
// runtime/protocol (what an identity is, and the wire's facts),
// runtime/settings (its settings), runtime/modelhttp (for the optional
// embeddings client) and, for the Keeper, runtime/clock, runtime/seen and
// runtime/metrics.
//
// The Keeper is a companion's memory policy over its Store: what a
// companion heard since the last rest, recall for a message, rest →
// extraction → write, forgetting, and the facts other companions share
// (keeper.go). Fact is the one fact type: the brain's prompt and
// extraction take it too, and Fact.Wire and FromWire convert the wire's
// protocol.MemoryFact.
// The rules that need no model live here too: Extract (simple
// self-statements, English and Japanese), Control ("forget that", "forget
// me", "what do you remember about me") and the spoken replies Describe
// and Acknowledge; and Check, the one check of a fact's key and text that
// the rules and a model's extraction both pass (a key says what a fact
// is about, never its value, NormKey; a name is a name; no fact reads as
// an instruction).
//
// Recall is lexical (shared words, weighted by rarity; Han and kana by
// character pairs) and needs no model. Optionally, an Embedder (an
// OpenAI-compatible /v1/embeddings client is here) gives each fact a
// vector, kept in its record, and RecallVec recalls by cosine.
//
// # Usage
//
//	st, err := memory.Open(stateDir, "robot-a", memory.Limits{}, log)
//	...
//	st.Touch(person)                          // once a person speaks
//	st.Add(memory.Fact{Person: person, MessageID: id, Key: "name", Text: "name is Alice"})
//	facts := st.Recall(people, message, 8)    // into the prompt, as facts
//	st.Forget(person)                         // "forget me": erased from disk
//
// # File format
//
// One append-only file <dir>/<companion>.facts (beside it the journal,
// below), one JSON object per line:
//
//	{"op":"fact","id":"…","person":"…","key":"name","text":"name is Alice","messageId":"…","robot":"…","created":"…","pinned":true}
//	{"op":"met","person":"…","at":"…"}
//	{"op":"end","n":2}
//
// A fact record is a Fact with op "fact"; a newer fact with the same person
// and key, or one whose supersedes names an older fact of the same person,
// replaces it when the file is replayed. A met record says the companion has
// answered a person (one per person; its already_replied). An end record closes a
// rewritten file and counts the records before it. A fact's text is
// untrusted input from people: it is only ever a JSON string, with control
// characters removed, clipped to MaxText characters. A person is an
// identity (protocol.ValidIdentity: at most 64 bytes, no '/', '+', '#',
// '$', spaces or control characters); Add refuses a fact and Touch a
// person that is not one.
//
// Open accepts only what Add and Touch write: a record with a field its op
// does not have, a person that is not an identity, or a text or key longer
// than MaxText or MaxKey characters is a bad line.
//
// # Crash safety
//
// An append writes whole lines and is followed by fsync; earlier bytes are
// never rewritten in place except to erase them. A kill -9 or a power cut
// in the middle of an append can only leave a torn last line (no trailing
// newline, or unparseable): Open drops it (logged, counted in Repaired),
// zeroes its bytes and truncates the file back to the last good line, so
// every earlier fact survives. A bad line in the middle is skipped and
// counted (Repaired), logged, never fatal, and the file is rewritten
// without it.
//
// # Journal
//
// What people said and is not extracted yet waits in <dir>/<companion>.pending
// (Journal, opened by Open; mode 0600 in the 0700 folder): one JSON line
// per message heard, {"person":…,"messageId":…,"text":…}, each append
// fsynced, so that a kill -9 or a power cut before the conversation rests
// loses at most the line being written; the companion extracts what it
// holds at its next start. It is bounded (PendingLines lines,
// PendingBytes bytes: beyond them the oldest lines go). A line taken out
// (extracted, "forget that", Forget of its person, Wipe) has its bytes
// zeroed in place and synced; the file is truncated when nothing is left,
// and compacted as a rewrite is (.new, zero, rename) when the zeros would
// push it over its bound. Open skips a torn last line and a line half
// zeroed by a crash (logged, zeroed), and finishes an interrupted
// compaction.
//
// # Bounds
//
// Limits bound the facts per person, the facts in all (and the people
// with a met record), and the bytes of the file. Beyond the count bounds
// the oldest unpinned fact (of that person, then of anyone) is evicted.
// Beyond Limits.Bytes (the live records and room for an end record) each
// eviction takes, in this order: the oldest met record of a person with
// no facts; the oldest unpinned fact; the oldest met record of a person
// with facts; the oldest pinned fact. Pinned facts (a person's core: the
// name is always pinned) go only when nothing else is left, so strangers
// met once never push out what people said about themselves.
//
// The file never holds a superseded or evicted record for long: an Add or
// Touch that supersedes or evicts anything rewrites the file (see
// Erasure) instead of appending, and an append that leaves the file over
// Limits.Bytes, or over about twice the live bytes, compacts it. So the
// file stays within Limits.Bytes. A rewrite costs writing the live
// records and zeroing the old file (both synced): at the bounds, every
// Add that evicts pays it. Opening a file with smaller Limits than it was
// written with drops what no longer fits (in the order above), logs a
// WARN line with how many facts and met records were dropped, and
// rewrites the file without them.
//
// # Erasure
//
// Forget, Wipe, an Add or Touch that supersedes or evicts, Open when the
// file holds a bad line or a record that is not live, and compaction
// rewrite the file so that what was forgotten, corrected or evicted is
// found nowhere in the directory afterwards: the live records and a
// final end record are written to <companion>.facts.new and synced; the old
// file's bytes are overwritten in place with zeros and synced; the new file
// is renamed over the old and the directory synced. Open finishes an
// interrupted rewrite: a .new with its end record is authoritative (the old
// file is zeroed and replaced); a .new without one is incomplete and is
// zeroed and removed.
//
// The limit, honestly: we zero the blocks the filesystem gives us. A
// journaling or copy-on-write filesystem (ext4 with data=journal, btrfs, an
// overlay) may keep old copies of blocks, and an SD card's or SSD's wear
// levelling may keep the old flash pages until they are reused; neither is
// reachable from a program. For erasure that survives forensic reading of
// the card, keep the state directory on an encrypted filesystem and
// destroy its key.
//
// # Concurrency
//
// A Store is safe for concurrent use. Readers (Facts, Met, People, Recall,
// Search) read the memory and never wait for the disk; writers (Add, Touch,
// Forget, Wipe) are serialised, write and sync on the caller's goroutine,
// and publish the new state only once it is durable. Call them from a
// goroutine of your own, never from an event loop. One Store per file: a
// second Open of the same file in the same process fails.
package memory
