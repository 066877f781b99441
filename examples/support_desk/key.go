package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// loadKey reads the desk's signing key from path (its Ed25519 seed in
// hex), making one when the file is missing: the private key in path
// (0600) and the public key in path+".pub", which `bk verify --key` and
// an auditor's verifier take. Each file is written whole or not at all.
func loadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		if err := writeWhole(path, hex.EncodeToString(priv.Seed())+"\n", 0o600); err != nil {
			return nil, err
		}
		pub := priv.Public().(ed25519.PublicKey)
		return priv, writeWhole(path+".pub", hex.EncodeToString(pub)+"\n", 0o644)
	}
	if err != nil {
		return nil, err
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing key %s: want %d bytes of Ed25519 seed in hex", path, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// writeWhole writes data to path through a file beside it, renamed into
// place: a crash leaves the old file or the new one, never a part.
func writeWhole(path, data string, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // nothing once renamed
	_, err = f.WriteString(data)
	if err = errors.Join(err, f.Chmod(mode), f.Sync(), f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
