package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// A damaged calibration store is an error at start, never a crash: bbolt
// maps the file into memory and reads pages where its meta page says they
// are, so a file cut short (a full disk, a copy interrupted) faults with
// SIGBUS on the first page past its end, and a page of garbage panics.
// checkBoltFile reads the meta pages before bbolt does, and the store is
// then opened and every page checked (tx.Check) with faults turned into
// panics and recovered.

// Layout of a bbolt meta page (go.etcd.io/bbolt internal/common): a
// 16-byte page header, then magic, version, page size and flags (uint32
// each), the root bucket (16 bytes), the freelist page, the high-water
// page id, the transaction id and an FNV-64a checksum of everything
// before it (uint64 each), in the machine's byte order (little-endian on
// the platforms Headroom builds for).
const (
	boltMagic       = 0xED0CDAED
	boltMetaOffset  = 16
	boltPgidAt      = boltMetaOffset + 40
	boltTxidAt      = boltMetaOffset + 48
	boltChecksumAt  = boltMetaOffset + 56
	boltMinPageSize = 512
)

// errDamagedStore marks a calibration store that cannot be read.
var errDamagedStore = errors.New("the calibration store file is damaged")

// checkBoltFile checks that path is a bbolt file whose pages all lie
// within it (an empty or missing file is new, and fine).
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	head := make([]byte, boltChecksumAt+8)
	if _, err := f.ReadAt(head, 0); err != nil {
		return fmt.Errorf("%w: %d bytes, shorter than a meta page", errDamagedStore, size)
	}
	pageSize := int64(binary.LittleEndian.Uint32(head[boltMetaOffset+8:]))
	if binary.LittleEndian.Uint32(head[boltMetaOffset:]) != boltMagic || pageSize < boltMinPageSize || pageSize > 1<<20 {
		pageSize = int64(os.Getpagesize()) // bbolt's fallback when page 0 is unreadable
	}
	var best struct {
		ok         bool
		txid, pgid uint64
	}
	for i := int64(0); i < 2; i++ {
		m := make([]byte, boltChecksumAt+8)
		if _, err := f.ReadAt(m, i*pageSize); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		h := fnv.New64a()
		h.Write(m[boltMetaOffset:boltChecksumAt])
		if binary.LittleEndian.Uint32(m[boltMetaOffset:]) != boltMagic || h.Sum64() != binary.LittleEndian.Uint64(m[boltChecksumAt:]) {
			continue
		}
		if txid := binary.LittleEndian.Uint64(m[boltTxidAt:]); !best.ok || txid > best.txid {
			best.ok, best.txid, best.pgid = true, txid, binary.LittleEndian.Uint64(m[boltPgidAt:])
		}
	}
	switch {
	case !best.ok:
		return fmt.Errorf("%w: neither meta page is valid (not a bbolt file, or overwritten)", errDamagedStore)
	case best.pgid > uint64(size/pageSize):
		return fmt.Errorf("%w: it is %d bytes long, but its pages reach %d bytes (cut short?)", errDamagedStore, size, best.pgid*uint64(pageSize))
	}
	return nil
}

// openBolt opens path and checks every page, turning a fault or a panic
// in bbolt into an error.
func openBolt(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	if err := checkBoltFile(path); err != nil {
		return nil, err
	}
	type result struct {
		db  *bolt.DB
		err error
	}
	out := make(chan result, 1)
	go func() {
		var db *bolt.DB
		defer func() {
			if p := recover(); p != nil {
				if db != nil {
					db.Close()
				}
				out <- result{err: fmt.Errorf("%w: %v", errDamagedStore, p)}
			}
		}()
		debug.SetPanicOnFault(true)
		db, err := bolt.Open(path, 0o644, opts)
		if err != nil {
			out <- result{err: err}
			return
		}
		err = db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(calibBucket); err != nil {
				return err
			}
			var errs []error
			for e := range tx.Check() {
				errs = append(errs, e)
			}
			return errors.Join(errs...)
		})
		if err != nil {
			db.Close()
			out <- result{err: fmt.Errorf("%w: %w", errDamagedStore, err)}
			return
		}
		out <- result{db: db}
	}()
	r := <-out
	return r.db, r.err
}
