package share

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"planbridge/relay"
)

// relaySecretBytes is the size of a relay link's secret (the owner secret
// and the two derived from it): 256 bits.
const relaySecretBytes = 32

// derive is HKDF-SHA256(secret, salt empty, info "planbridge/v1 "+label)
// to 32 bytes — the one function the page computes with WebCrypto too.
func derive(secret []byte, label string) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, "planbridge/v1 "+label, relaySecretBytes)
	if err != nil {
		panic(err) // only for an impossible length
	}
	return k
}

// tierSecrets derives the one-way chain from the owner secret: full =
// HKDF(owner, "full"), view = HKDF(full, "view"). A holder of a tier's
// secret computes every weaker one and no stronger one.
func tierSecrets(owner []byte) map[Tier][]byte {
	full := derive(owner, "full")
	return map[Tier][]byte{Owner: owner, Full: full, View: derive(full, "view")}
}

// relayKeys are a relay room's keys, all derived from its owner secret.
type relayKeys struct {
	room    string // relay.RoomID(host)
	host    []byte // host token: HKDF(owner, "host"); the relay checks it against room
	secrets map[Tier][]byte
	stream  cipher.AEAD          // host→pages, every tier: HKDF(view, "stream")
	action  map[Tier]cipher.AEAD // page→host: HKDF(tier secret, "action")
	reply   map[Tier]cipher.AEAD // host→pages of one tier: HKDF(tier secret, "reply")
}

func newAEAD(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // 32-byte keys only
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

func newRelayKeys(owner []byte) relayKeys {
	k := relayKeys{host: derive(owner, "host"), secrets: tierSecrets(owner),
		action: map[Tier]cipher.AEAD{}, reply: map[Tier]cipher.AEAD{}}
	k.room = relay.RoomID(k.host)
	k.stream = newAEAD(derive(k.secrets[View], "stream"))
	for t, s := range k.secrets {
		k.action[t] = newAEAD(derive(s, "action"))
		k.reply[t] = newAEAD(derive(s, "reply"))
	}
	return k
}

// downNonce is the nonce of host→page frame seq: 4 zero bytes and seq,
// big-endian. The host is the only sealer of the stream and reply keys,
// and seq never repeats within a room, so no key sees a nonce twice.
func downNonce(seq int64) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n[4:], uint64(seq))
	return n
}

// downAAD binds a host→page frame to its room, key label and seq.
func downAAD(room, k string, seq int64) []byte {
	return []byte("planbridge/v1 down\x00" + room + "\x00" + k + "\x00" + strconv.FormatInt(seq, 10))
}

// upFrame is a page→host frame as it crosses the relay.
type upFrame struct {
	Page string `json:"p"`  // random page id, base64url of 16 bytes
	N    int64  `json:"n"`  // the page's counter, from 1
	TS   int64  `json:"ts"` // the page's estimate of host time, Unix ms
	IV   string `json:"iv"` // 12 random bytes, base64
	C    string `json:"c"`  // sealed request, base64
}

// upAAD binds a page→host frame to its room, tier, page, counter and
// time. The tier is not on the wire: the host finds it by the key that
// opens the frame.
func upAAD(room string, t Tier, f upFrame) []byte {
	return []byte("planbridge/v1 up\x00" + room + "\x00" + t.String() + "\x00" + f.Page + "\x00" +
		strconv.FormatInt(f.N, 10) + "\x00" + strconv.FormatInt(f.TS, 10))
}
