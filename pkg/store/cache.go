package store

import (
	"sync"
	"time"
)

// maxCached bounds each cache; past it the cache starts over.
const maxCached = 10_000

// ttlCache keeps values read from DynamoDB for a short time, so that a
// request reads limits and namespace policies only now and then. Its TTL
// is how long a change of them can take to apply.
//
// Its keys are small structs rather than strings joined from their parts,
// so that looking a value up, which every request does several times,
// builds nothing.
type ttlCache[K comparable, V any] struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[K]cachedValue[V]
}

// namespaceRef names a namespace among every app's: the key of its cached
// policy.
type namespaceRef struct{ app, namespace string }

// ownerRef names an owner of data in an app: the key of the owner's
// cached limits and usage.
type ownerRef struct{ app, owner string }

type cachedValue[V any] struct {
	value   V
	expires time.Time
}

// get returns the cached value of key at now, or loads and keeps it.
func (c *ttlCache[K, V]) get(now time.Time, key K, load func() (V, error)) (V, error) {
	if v, ok := c.cached(now, key); ok {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.put(key, v, now)
	return v, nil
}

// cached returns key's value if one is kept and fresh at now, and reads
// nothing otherwise.
func (c *ttlCache[K, V]) cached(now time.Time, key K) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put keeps v as key's value, read at now.
func (c *ttlCache[K, V]) put(key K, v V, now time.Time) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[K]cachedValue[V]{}
	}
	c.m[key] = cachedValue[V]{value: v, expires: now.Add(c.ttl)}
	c.mu.Unlock()
}

// update replaces key's value, if one is kept, by what fn makes of it,
// keeping the time it was read.
func (c *ttlCache[K, V]) update(key K, fn func(V) V) {
	c.mu.Lock()
	if e, ok := c.m[key]; ok {
		e.value = fn(e.value)
		c.m[key] = e
	}
	c.mu.Unlock()
}

// forget drops key, so that this container applies a change it made at
// once.
func (c *ttlCache[K, V]) forget(key K) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// clear forgets every value, so that a change applies at once in this
// process.
func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
