package memory

// STUB: replaced by the real package (branch mem) before merging.

import (
	"log/slog"
	"time"
)

type Fact struct {
	ID         string    `json:"id"`
	Person     string    `json:"person"`
	Key        string    `json:"key,omitempty"`
	Text       string    `json:"text"`
	MessageID  string    `json:"messageId"`
	Robot      string    `json:"robot"`
	Created    time.Time `json:"created"`
	Pinned     bool      `json:"pinned,omitempty"`
	Supersedes string    `json:"supersedes,omitempty"`
}
type Limits struct {
	PerPerson, Total int
	Bytes            int64
}
type Store struct{}

func Open(dir, companion string, lim Limits, log *slog.Logger) (*Store, error) { return &Store{}, nil }
func (s *Store) Add(facts ...Fact) ([]Fact, error)                             { return nil, nil }
func (s *Store) Met(person string) bool                                        { return false }
func (s *Store) Touch(person string) error                                     { return nil }
func (s *Store) Forget(person string, ids ...string) (int, error)              { return 0, nil }
func (s *Store) Wipe() (int, error)                                            { return 0, nil }
func (s *Store) Facts(person string) []Fact                                    { return nil }
func (s *Store) People() []string                                              { return nil }
func (s *Store) Recall(people []string, message string, n int) []Fact          { return nil }
func (s *Store) Search(person, query string, n int) []Fact                     { return nil }
func (s *Store) Close() error                                                  { return nil }

type Statement struct {
	Key, Text string
	Pinned    bool
}

func Extract(text string) []Statement { return nil }

type Command int

const (
	None Command = iota
	ForgetThat
	ForgetMe
	Recall
)

func Control(text string) Command                      { return None }
func Describe(lang string, facts []Fact) string        { return "" }
func Acknowledge(lang string, c Command, n int) string { return "" }
