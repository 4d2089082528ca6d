package replay

// pending is a request not yet admitted (16 bytes).
type pending struct {
	arrival        float64
	prompt, output int32
}

// fifo is a ring buffer of pending requests that reuses its memory.
type fifo struct {
	buf  []pending
	head int
	n    int
}

func (q *fifo) push(p pending) {
	if q.n == len(q.buf) {
		nb := make([]pending, max(16, 2*len(q.buf)))
		copy(nb[copy(nb, q.buf[q.head:]):], q.buf[:q.head]) // full: head to end, then start to head
		q.buf, q.head = nb, 0
	}
	i := q.head + q.n // < 2·len(buf): a subtraction wraps it, no division
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = p
	q.n++
}

func (q *fifo) front() *pending { return &q.buf[q.head] }

func (q *fifo) pop() pending {
	p := q.buf[q.head]
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	return p
}

// seq is a running sequence (24 bytes). Its context at replica step s is
// a + s tokens: prompt + generated, where a = prompt + 1 - join step.
type seq struct {
	finish         int64 // the replica step count at which its last token is out
	a              int64
	prompt, output int32 // KV reserved at admission: prompt + output tokens
}

// runHeap is a min-heap of running sequences by finish step.
type runHeap []seq

func (h *runHeap) push(s seq) {
	*h = append(*h, s)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].finish <= a[i].finish {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *runHeap) pop() seq {
	a := *h
	top := a[0]
	n := len(a) - 1
	x := a[n]
	a = a[:n]
	if n > 0 {
		// Sift the last element down from the root, moving the hole
		// rather than swapping: the same layout as swaps, half the writes
		// (pointers and unsigned indices: no bounds checks in the loop).
		hole, i := &a[0], uint(0)
		for {
			l := 2*i + 1
			if l >= uint(len(a)) {
				break
			}
			c, m := &a[l], l
			if r := l + 1; r < uint(len(a)) {
				if rc := &a[r]; rc.finish < c.finish {
					c, m = rc, r
				}
			}
			if x.finish <= c.finish {
				break
			}
			*hole = *c
			hole, i = c, m
		}
		*hole = x
	}
	*h = a
	return top
}
