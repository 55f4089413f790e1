package ipcx

import (
	"math"
	"net"
	"sync"
	"time"
)

// Auto compression: per stream, pick the codec that delivers the most
// rows per second, none when the link is faster than compression.
//
// What the sender sees tells the regimes apart. With a pipeline between
// the writer (producing and compressing) and the sender, in steady state
// the time between two sends' returns is the batch time of the slowest
// stage, and SendMsg blocks (gRPC's per-stream write quota, refilled as
// the transport drains the previous message into the socket under HTTP/2
// flow control) only when the link is that stage:
//
//   - link-bound (SendMsg blocked for a fifth of the interval or more):
//     the wire bytes of the previous batch over the interval is the
//     link's rate. A codec that sends fewer bytes per row delivers more
//     rows, up to the speed it compresses at: predicted rows/s =
//     min(link rate / wire bytes per row, compression speed / raw bytes
//     per row). The best prediction, if 15% better, is switched to.
//     Ratios of codecs not used yet come from a one-off probe (a sample
//     of the first batch compressed with each); their speed is known
//     only once batches have used them, so until then the prediction
//     leaves it out and auto goes one codec costlier at a time.
//   - not link-bound (producer- or CPU-bound): the cheaper codec may do
//     better, which cannot be predicted, so it is tried.
//
// Every switch is verified by measurement: once the new codec has sent
// enough to have turned the receiver's flow-control window over and has
// four clean intervals (consecutive batches with it), its rate (rows per
// second, averaged as seconds per row) is compared with the best rate
// measured with another codec, or the link model's prediction for the
// codec it replaced. The burden of proof is on spending: a costlier codec
// stays only if it is 5% faster, a cheaper one unless it is 10% slower.
// A loser is not tried again for 32 batches.
//
// A peer on this host (loopback, or one of this host's addresses) gets
// no compression: its "link" is a memory copy on the very cores the
// codec would use, and the receiver's decompression takes them too.
// Sender-side measurements cannot see that sharing (the receiver looks
// like a slow link), so here auto does not measure; measured on the
// 2-core build machine, LZ4 on loopback is about 2× slower end to end.
//
// A new stream starts with the codec the last stream from the same peer
// host kept or moved up to (PeerMemory), and with the link rate it
// measured, so exploration is paid once per peer, not per stream. A codec
// measured worse on that peer is not tried early in its streams for a
// minute; a cheaper codec the link rate says would fill the link below
// the current rate is not tried at all. A peer never seen starts
// uncompressed: CPU is spent on compression only once the link is shown
// to be the bottleneck.
//
// Rates are averaged as a plain mean over a phase's first samples and a
// slow moving average after, and compression speed is measured only
// after a stream's first batches (which compress while the query starts,
// at half speed): one stalled interval must not decide a switch.

// autoParams tune the chooser.
type autoParams struct {
	linkBound float64 // SendMsg blocked this fraction of the interval or more: link-bound
	gain      float64 // a predicted rate must beat the current one by this factor to switch
	// keepCostlier: a codec that costs more CPU than the best other codec
	// measured stays only if its rate is at least this multiple of that
	// codec's; keepCheaper is the same for one that costs less. The
	// burden of proof is on spending: a costlier codec must win, a
	// cheaper one must not clearly lose.
	keepCostlier, keepCheaper float64
	badFor                    int // batches a codec that lost is not tried again
	minPhase                  int // batches with one codec before it is judged
	// verifySamples is the clean intervals a new codec needs before it
	// is compared with the old one.
	verifySamples int
	// warmup is the batches at the start of a stream whose intervals are
	// not measured.
	warmup int
	// settleBytes: after the start or a switch, rates are measured only
	// once this many bytes went out with the codec. Until the receiver's
	// flow-control window (and the socket buffers) has turned over, the
	// sender is filling it, not keeping pace with the receiver: a switch
	// to a codec with fewer bytes per row looks faster than it is, and
	// one back looks slower.
	settleBytes int64
	// fresh is how many batches old a measured rate may be and still be
	// trusted over a prediction.
	fresh int
	alpha float64 // weight of a new sample in the averages
	// rateAlpha is alpha for the delivered rate, which is compared
	// across codecs: a single slow interval (a stall of the machine)
	// must not decide.
	rateAlpha float64
	probeMax  int // bytes compressed by one probe
}

var defaultAutoParams = autoParams{
	linkBound:     0.2,
	gain:          1.1,
	keepCostlier:  1.05,
	keepCheaper:   0.95,
	badFor:        32,
	minPhase:      2,
	verifySamples: 4,
	warmup:        5,
	settleBytes:   12 << 20,
	fresh:         16,
	alpha:         0.3,
	rateAlpha:     0.15,
	probeMax:      1 << 20,
}

// ewma is an exponentially weighted moving average. Until 1/alpha
// samples have come it is their plain mean, so the first samples do not
// weigh more than the later ones.
type ewma struct {
	v float64
	n int
}

func (e *ewma) add(x, alpha float64) {
	e.n++
	e.v += max(alpha, 1/float64(e.n)) * (x - e.v)
}

// linkRate averages bytes and seconds apart; its rate is their ratio.
// prior is the rate the peer's last streams measured, used until this
// stream has linkTrust samples of its own.
type linkRate struct {
	bytes, secs ewma
	prior       float64
}

// linkTrust is the link-bound intervals after which a stream's own link
// rate is trusted over the peer's prior.
const linkTrust = 4

func (l *linkRate) add(bytes int64, d time.Duration, alpha float64) {
	l.bytes.add(float64(bytes), alpha)
	l.secs.add(d.Seconds(), alpha)
}

// bps is the bytes/s, 0 before any sample.
func (l *linkRate) bps() float64 {
	if l.prior > 0 && l.secs.n < linkTrust {
		return l.prior
	}
	if l.secs.n == 0 || l.secs.v <= 0 {
		return 0
	}
	return l.bytes.v / l.secs.v
}

// trusted reports whether bps rests on more than a stream's first
// intervals (those run fast while buffers fill).
func (l *linkRate) trusted() bool { return l.secs.n >= linkTrust || l.prior > 0 }

// codecEst is what one stream has measured about one codec.
type codecEst struct {
	// spr is seconds per row delivered, from clean intervals; the rate
	// is its inverse. Averaging time rather than rate keeps a burst of
	// short intervals (batches queued behind a slow one) from
	// inflating it.
	spr     ewma
	rateAt  int  // batch index of the last rate sample
	pressAt int  // batch index of the last press sample
	press   ewma // fraction of the interval SendMsg blocked
	ratio   ewma // wire bytes / raw bytes
	speed   ewma // raw bytes/s compressed, all cores: from batches, else the probe
	// encRaw and encBusy add up the batches compressed with the codec
	// and the compression stage's busy time for them.
	encRaw   int64
	encBusy  time.Duration
	encN     int
	badUntil int // batch index before which it is not tried again
}

// rate is the delivered rows/s, 0 when not measured.
func (e *codecEst) rate() float64 {
	if e.spr.n == 0 || e.spr.v <= 0 {
		return 0
	}
	return 1 / e.spr.v
}

// ProbeStat is one codec compressing a sample of a batch, on one core.
type ProbeStat struct {
	Codec     Codec
	Raw, Wire int64
	Took      time.Duration
}

// AutoChooser is the Chooser of auto compression for one stream. It is
// safe for concurrent use.
type AutoChooser struct {
	mu   sync.Mutex
	p    autoParams
	mem  *PeerMemory
	peer string

	cur        Codec
	prev       Codec // codec before the last switch, while verifying
	verifying  bool
	confirmed  bool // cur has been measured and kept
	switchedAt int
	batch      int
	probed     bool

	lastCodec  Codec
	lastSent   time.Time
	lastEncEnd time.Time // when the last batch's compression ended
	lastWire   int64

	est       [3]codecEst
	rawPerRow ewma
	// link is the wire bytes/s the link drains, from link-bound
	// intervals: averaged bytes over averaged seconds, so a short
	// interval (a batch that queued behind a slow one and went at once)
	// weighs as little as it lasted instead of as a huge rate.
	link linkRate
	// sinceSwitch is the wire bytes sent with the current codec since
	// the stream started or the codec changed.
	sinceSwitch int64
	// settle is how many bytes sinceSwitch must reach before rates are
	// measured: settleBytes after the start or a switch away from a
	// link-bound codec (the window is full of its bytes), else 0.
	settle   int64
	switches int
}

// NewAutoChooser returns the chooser of one stream from peer (a host,
// "" for none), starting with what mem remembers about the peer, else
// uncompressed. mem may be nil.
func NewAutoChooser(mem *PeerMemory, peer string) *AutoChooser {
	a := &AutoChooser{p: defaultAutoParams, mem: mem, peer: peer, cur: CodecNone}
	a.settle = a.p.settleBytes
	if mem != nil && peer != "" {
		e, ok := mem.lookup(peer)
		if ok {
			a.cur = e.codec
		}
		a.link.prior = e.link
		// A codec that lost to another on this peer lately is not tried
		// again early in the next stream either.
		for c, lost := range e.lost {
			if lost {
				a.est[c].badUntil = a.p.badFor
			}
		}
	}
	return a
}

// Choose returns the codec for the next record batch.
func (a *AutoChooser) Choose() Codec {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// Probe returns the codecs to sample on the next batch: once per stream,
// those whose ratio is not known.
func (a *AutoChooser) Probe() []Codec {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.probed {
		return nil
	}
	a.probed = true
	var out []Codec
	for _, c := range []Codec{CodecLZ4, CodecZSTD} {
		if c != a.cur && a.est[c].ratio.n == 0 {
			out = append(out, c)
		}
	}
	return out
}

// Switches is how many times the codec changed (tests, metrics).
func (a *AutoChooser) Switches() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.switches
}

// Observe learns from one record batch sent.
func (a *AutoChooser) Observe(st BatchStat) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.batch++
	p := a.p
	e := &a.est[st.Codec]
	if st.RawBytes > 0 && st.Rows > 0 {
		e.ratio.add(float64(st.WireBytes)/float64(st.RawBytes), p.alpha)
		a.rawPerRow.add(float64(st.RawBytes)/float64(st.Rows), p.alpha)
		if st.Codec != CodecNone && st.Encode > 0 {
			// The compression stage's throughput: the time this batch
			// added to the stage's busy period, not its own duration
			// (up to three batches compress at once, sharing cores).
			end := st.EncodeStart.Add(st.Encode)
			busy := st.Encode
			if !a.lastEncEnd.IsZero() && a.lastEncEnd.After(st.EncodeStart) {
				busy = end.Sub(a.lastEncEnd)
			}
			if busy > 0 && a.batch > p.warmup {
				// Over the stream, total bytes over total busy time: a
				// first batch that shared the cores with the next ones
				// and the batches that then finished right after it even
				// out. The first batches are left out: they compress
				// while the query starts and the first results are sent,
				// and measured zstd at half its speed.
				e.encRaw += st.RawBytes
				e.encBusy += busy
				e.encN++
				e.speed = ewma{v: float64(e.encRaw) / e.encBusy.Seconds(), n: 1}
			}
			if end.After(a.lastEncEnd) {
				a.lastEncEnd = end
			}
		}
	}
	for _, pr := range st.Probes {
		if pr.Raw > 0 && pr.Took > 0 {
			pe := &a.est[pr.Codec]
			pe.ratio.add(float64(pr.Wire)/float64(pr.Raw), p.alpha)
		}
	}
	if !a.lastSent.IsZero() && a.lastCodec == st.Codec {
		if d := st.Sent.Sub(a.lastSent); d > 0 {
			// The first intervals of a stream run fast: the producer and
			// the pipeline had batches ready (up to five). They say
			// nothing of the rate, but a sender blocked even then
			// (socket buffers still filling) is a sender on a slow link.
			if a.batch > p.warmup && a.sinceSwitch >= a.settle {
				e.spr.add(d.Seconds()/float64(st.Rows), p.rateAlpha)
				e.rateAt = a.batch
			}
			press := math.Min(1, st.Send.Seconds()/d.Seconds())
			e.press.add(press, p.alpha)
			e.pressAt = a.batch
			if press >= p.linkBound && a.lastWire > 0 {
				a.link.add(a.lastWire, d, p.alpha)
				if a.mem != nil && a.peer != "" && a.link.secs.n >= linkTrust {
					a.mem.rememberLink(a.peer, a.link.bps())
				}
			}
		}
	}
	a.lastSent, a.lastCodec, a.lastWire = st.Sent, st.Codec, st.WireBytes
	if st.Codec == a.cur {
		a.sinceSwitch += st.WireBytes
		a.decide()
	}
}

// decide verifies the last switch or considers a new one.
func (a *AutoChooser) decide() {
	p := a.p
	cur := &a.est[a.cur]
	if a.verifying {
		if cur.spr.n < p.verifySamples {
			return
		}
		a.verifying = false
		// A cheaper codec that does not fill the link costs less CPU at
		// no loss of link: it stays, whatever a noisy interval says.
		// Otherwise it is judged against the best rate measured with any
		// codec in this stream, and loses to it by a margin.
		if !(a.cur < a.prev && cur.press.v < p.linkBound) {
			alt, altRate := a.bestMeasured()
			if alt == a.cur && a.link.trusted() {
				// Nothing measured long enough to compare with: the codec
				// it replaced, as the link model predicts it, once the
				// link's rate rests on more than the first intervals
				// (those run fast while buffers fill; a switch made on
				// them is kept until measurement says otherwise).
				if r, ok := a.predict(a.prev); ok {
					alt, altRate = a.prev, r
				}
			}
			keep := p.keepCostlier
			if a.cur < alt {
				keep = p.keepCheaper
			}
			if alt != a.cur && cur.rate() < altRate*keep {
				a.lose(a.cur)
				a.switchTo(alt)
				a.confirm()
				return
			}
		}
		// Kept. The codec it replaced lost if it measured clearly worse.
		oldRate := a.est[a.prev].rate()
		if a.est[a.prev].spr.n < p.verifySamples {
			oldRate = 0
			if a.link.trusted() {
				oldRate, _ = a.predict(a.prev)
			}
		}
		switch {
		case oldRate > 0 && cur.rate() > oldRate*p.keepCostlier && a.est[a.prev].spr.n >= p.verifySamples:
			a.lose(a.prev)
		case oldRate > 0 && cur.rate() > oldRate*p.keepCostlier:
			// Worse only as predicted: not again in this stream, but
			// the peer's next streams may measure it.
			a.est[a.prev].badUntil = a.batch + p.badFor
		case a.cur < a.prev:
			// Thrift was kept: the costlier codec is not predicted back
			// at once, or two near-equal codecs would take turns.
			a.est[a.prev].badUntil = a.batch + p.badFor
		}
	}
	if cur.spr.n > 0 {
		a.confirm()
	}
	if a.batch-a.switchedAt < p.minPhase || cur.press.n < 2 {
		return // too soon to tell which stage holds the stream back
	}
	best := a.cur
	if cur.press.v >= p.linkBound && a.link.bps() > 0 {
		// Link-bound: fewer bytes per row may deliver more rows.
		// Predictions rest on this moment's link rate and the codecs'
		// compression speeds; a switch is then verified by measurement.
		curRate := cur.rate()
		if curRate == 0 {
			curRate, _ = a.predict(a.cur)
		}
		bestRate := curRate * p.gain
		for _, c := range []Codec{CodecNone, CodecLZ4, CodecZSTD} {
			if c == a.cur || a.batch < a.est[c].badUntil {
				continue
			}
			if c > a.cur+1 && a.est[c].encN < p.verifySamples {
				// Spend one step at a time while speeds are guesses.
				continue
			}
			if r, ok := a.predict(c); ok && r > bestRate {
				best, bestRate = c, r
			}
		}
	}
	// A sender that does not block early in a stream or after a switch
	// says little (the socket buffers and the window are filling up): the
	// link is judged to have room only once rates are being measured.
	if best == a.cur && a.cur != CodecNone && cur.press.v < p.linkBound && cur.spr.n >= p.verifySamples {
		// The link has room: the cheaper codec may deliver more. Use
		// what was measured of it, else try it; a loser is not tried
		// again for a while (here and, through PeerMemory, in the peer's
		// next streams).
		cheaper := a.cur - 1
		ce := a.est[cheaper]
		switch {
		case a.batch < ce.badUntil:
		case ce.press.n > 0 && a.batch-ce.pressAt <= p.fresh && ce.press.v >= p.linkBound:
			// It filled the link moments ago: that is why it was left.
		case a.link.trusted() && a.predictedBelow(cheaper, cur.rate()*p.keepCheaper):
			// It would fill the link at less than the current rate.
		case ce.spr.n == 0 || ce.rate() > cur.rate()*p.keepCheaper:
			best = cheaper
		}
	}
	if best != a.cur {
		a.prev = a.cur
		a.verifying = true
		a.switchTo(best)
	}
}

// predictedBelow reports whether c's predicted rate is known and below
// rate.
func (a *AutoChooser) predictedBelow(c Codec, rate float64) bool {
	r, ok := a.predict(c)
	return ok && r < rate
}

// lose marks c as measured worse than another codec: not tried again
// in this stream for badFor batches, nor early in the peer's streams for
// lostTTL.
func (a *AutoChooser) lose(c Codec) {
	a.est[c].badUntil = a.batch + a.p.badFor
	if a.mem != nil && a.peer != "" {
		a.mem.lose(a.peer, c)
	}
}

// bestMeasured is the codec other than the current one with the highest
// recently measured rate, or the current one when none was measured.
func (a *AutoChooser) bestMeasured() (Codec, float64) {
	best, rate := a.cur, 0.0
	for _, c := range []Codec{CodecNone, CodecLZ4, CodecZSTD} {
		if e := a.est[c]; c != a.cur && e.spr.n >= a.p.verifySamples && a.batch-e.rateAt <= a.p.fresh && e.rate() > rate {
			best, rate = c, e.rate()
		}
	}
	return best, rate
}

// predict is c's delivered rows/s if the link stays as fast as it is
// now: bounded by the link at c's ratio and, once measured, by c's
// compression speed.
func (a *AutoChooser) predict(c Codec) (float64, bool) {
	e := a.est[c]
	link := a.link.bps()
	if a.rawPerRow.v <= 0 || link <= 0 {
		return 0, false
	}
	ratio := 1.0
	if c != CodecNone {
		if e.ratio.n == 0 {
			return 0, false
		}
		ratio = e.ratio.v
	}
	r := link / (ratio * a.rawPerRow.v)
	// The compression speed caps it once batches of this stream measured
	// it. A probe's speed does not: it runs on one core at the start of
	// the stream, when the query, the first batches and the sender take
	// the others, and comes out several times too slow (zstd: 30-60 MB/s
	// against 160-260 MB/s in the pipeline). Without a measurement the
	// prediction is optimistic and the switch is a trial, which
	// verification keeps or reverts.
	if c != CodecNone && e.encN >= a.p.verifySamples {
		r = math.Min(r, e.speed.v/a.rawPerRow.v)
	}
	return r, true
}

func (a *AutoChooser) switchTo(c Codec) {
	// The new codec is judged on what it does now, not on samples from
	// another moment of the stream.
	a.est[c].spr = ewma{}
	a.est[c].press = ewma{}
	a.sinceSwitch = 0
	// Rates are measured once the receiver's window and the socket
	// buffers hold the new codec's bytes: after a switch away from a
	// codec that filled the link (they are full of its bytes), and after
	// a switch to a cheaper one (they were not full, and its bytes go
	// faster than the link until they are).
	a.settle = 0
	if old := a.est[a.cur].press; c < a.cur || old.n > 0 && old.v >= a.p.linkBound {
		a.settle = a.p.settleBytes
	}
	costlier := c > a.cur
	a.cur = c
	a.switchedAt = a.batch
	a.confirmed = false
	a.switches++
	// After a switch to a costlier codec (the link held the stream
	// back), the peer's next stream starts here even if this one ends
	// before the switch is verified (a slow link makes few, long
	// batches); it goes on measuring from there. A cheaper codec is a
	// trial of a link with room, remembered only once it is kept.
	if a.mem != nil && a.peer != "" && costlier {
		a.mem.remember(a.peer, c)
	}
}

// confirm records that the current codec was measured and kept.
func (a *AutoChooser) confirm() {
	if a.confirmed {
		return
	}
	a.confirmed = true
	if a.mem != nil && a.peer != "" {
		a.mem.remember(a.peer, a.cur)
	}
}

// PeerMemory remembers, per peer host, the codec auto settled on, so the
// next stream from that peer starts there. It is safe for concurrent use.
type PeerMemory struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	now func() time.Time
	m   map[string]peerEntry
}

type peerEntry struct {
	codec Codec
	at    time.Time
	// lost marks codecs that were tried and measured worse; lostAt is
	// when, and the mark lasts lostTTL.
	lost   [3]bool
	lostAt [3]time.Time
	// link is the wire bytes/s the link to the peer drained at linkAt;
	// it lasts lostTTL.
	link   float64
	linkAt time.Time
}

// lostTTL is how long a codec that lost on a peer is not tried early in
// a stream.
const lostTTL = time.Minute

// NewPeerMemory returns a memory whose entries last ttl; now is the clock
// (nil: time.Now).
func NewPeerMemory(ttl time.Duration, now func() time.Time) *PeerMemory {
	if now == nil {
		now = time.Now
	}
	return &PeerMemory{ttl: ttl, max: 4096, now: now, m: map[string]peerEntry{}}
}

// DefaultPeerMemory is the process-wide memory servers use.
var DefaultPeerMemory = NewPeerMemory(10*time.Minute, nil)

// lookup returns what is remembered of peer: ok when its codec is
// fresh; the lost marks that are still fresh either way.
func (m *PeerMemory) lookup(peer string) (peerEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[peer]
	now := m.now()
	for c := range e.lost {
		e.lost[c] = e.lost[c] && now.Sub(e.lostAt[c]) <= lostTTL
	}
	if now.Sub(e.linkAt) > lostTTL {
		e.link = 0
	}
	return e, ok && now.Sub(e.at) <= m.ttl
}

// lose marks c as measured worse than another codec on peer.
func (m *PeerMemory) lose(peer string, c Codec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.m[peer] // a peer with no codec yet keeps its marks: at is zero
	e.lost[c], e.lostAt[c] = true, m.now()
	m.m[peer] = e
}

// rememberLink records the link rate a stream to peer measured.
func (m *PeerMemory) rememberLink(peer string, bps float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[peer]
	if !ok && len(m.m) >= m.max {
		return
	}
	e.link, e.linkAt = bps, m.now()
	m.m[peer] = e
}

func (m *PeerMemory) remember(peer string, c Codec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.m) >= m.max {
		for k, e := range m.m {
			if now.Sub(e.at) > m.ttl {
				delete(m.m, k)
			}
		}
		if len(m.m) >= m.max {
			return
		}
	}
	e := m.m[peer]
	e.codec, e.at = c, now
	e.lost[c] = false
	m.m[peer] = e
}

// SameHost reports whether peer (an IP address) is this host: loopback,
// or an address of one of its interfaces.
func SameHost(peer string) bool {
	ip := net.ParseIP(peer)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
