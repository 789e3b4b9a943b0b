package event

import (
	"encoding/json"
	"time"
)

// Event is one entry of a session's event log as every surface gets it:
// the data of one [Data] kind under the sequence number its committed row
// holds (0 only for a notification whose commit failed; see [Error]).
type Event struct {
	Session string          `json:"session"`
	Seq     int64           `json:"seq"`
	Kind    string          `json:"kind"`
	Data    json.RawMessage `json:"data"`
	Time    time.Time       `json:"time"`
}
