package server

// The Responses API's memory for previous_response_id: a bounded LRU of
// recent responses' conversations, shared by every model of the front.

import (
	"container/list"
	"encoding/json"
	"sync"
)

// responseStore keeps recent responses' conversations for
// previous_response_id: at most maxCount entries and maxBytes of their
// JSON, the least recently used dropped first.
type responseStore struct {
	mu       sync.Mutex
	maxCount int
	maxBytes int
	bytes    int
	lru      *list.List // of *storedResponse, most recent at the front
	byID     map[string]*list.Element
}

type storedResponse struct {
	id    string
	msgs  []wireMessage // the conversation up to and including the response's output
	bytes int
}

func newResponseStore(maxCount, maxBytes int) *responseStore {
	return &responseStore{maxCount: maxCount, maxBytes: maxBytes, lru: list.New(), byID: map[string]*list.Element{}}
}

// Default bounds of a server's response memory.
const (
	responseStoreCount = 1024
	responseStoreBytes = 64 << 20
)

func (st *responseStore) put(id string, msgs []wireMessage) {
	b, _ := json.Marshal(msgs)
	n := len(b) + len(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	if n > st.maxBytes {
		return // larger than the whole memory: never kept
	}
	if el, ok := st.byID[id]; ok {
		st.remove(el)
	}
	st.byID[id] = st.lru.PushFront(&storedResponse{id: id, msgs: msgs, bytes: n})
	st.bytes += n
	for st.lru.Len() > st.maxCount || st.bytes > st.maxBytes {
		st.remove(st.lru.Back())
	}
}

func (st *responseStore) remove(el *list.Element) {
	r := st.lru.Remove(el).(*storedResponse)
	delete(st.byID, r.id)
	st.bytes -= r.bytes
}

// get returns a stored conversation (and marks it used).
func (st *responseStore) get(id string) ([]wireMessage, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	el, ok := st.byID[id]
	if !ok {
		return nil, false
	}
	st.lru.MoveToFront(el)
	return el.Value.(*storedResponse).msgs, true
}
