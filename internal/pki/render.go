package pki

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// Stored is what a managed Secret holds: its data, and the rotation records a CA Secret keeps
// in annotations (Observed.Token and Observed.ReissuedAt).
type Stored struct {
	Data       map[string][]byte
	Token      string
	ReissuedAt time.Time
}

// errNoStagedCA says a promotion found no staged CA to promote.
var errNoStagedCA = errors.New("the CA Secret holds no staged CA in next.crt and next.key")

// RenderCA is a new CA Secret: a CA issued at now, trusted by its own bundle.
func RenderCA(w Write, now time.Time) (Stored, error) {
	kp, err := NewCA(w.CommonName, CAValidity, now)
	if err != nil {
		return Stored{}, err
	}
	certs, err := ParseCertificates(kp.Cert)
	if err != nil {
		return Stored{}, err
	}
	// ca.crt is the trust bundle every leaf copies; it holds a second CA during a rotation,
	// which tls.crt, the one that signs, cannot.
	return Stored{Data: map[string][]byte{CertKey: kp.Cert, KeyKey: kp.Key, CAKey: TrustBundle(certs[0])}, Token: w.Token}, nil
}

// RenderCAUpdate is what a rotation step leaves in a CA Secret that holds cur (as stored at
// w.Version).
func RenderCAUpdate(w Write, cur Stored, now time.Time) (Stored, error) {
	out := Stored{Data: maps.Clone(cur.Data), Token: cur.Token, ReissuedAt: cur.ReissuedAt}
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	switch w.Step {
	case CAStepImport:
		out.Data[CAKey] = w.Bundle
	case CAStepStage:
		bundle, err := ParseCertificates(cur.Data[CAKey])
		if err != nil {
			return Stored{}, fmt.Errorf("parsing the CA bundle: %w", err)
		}
		kp, err := NewCA(w.CommonName, CAValidity, now)
		if err != nil {
			return Stored{}, err
		}
		next, err := ParseCertificates(kp.Cert)
		if err != nil {
			return Stored{}, err
		}
		out.Data[NextCertKey], out.Data[NextKeyKey] = kp.Cert, kp.Key
		out.Data[CAKey] = TrustBundle(append(bundle, next[0])...)
		out.Token, out.ReissuedAt = w.Token, time.Time{}
	case CAStepPromote:
		if _, err := LoadCA(cur.Data[NextCertKey], cur.Data[NextKeyKey]); err != nil {
			return Stored{}, fmt.Errorf("%w: %w", errNoStagedCA, err)
		}
		out.Data[CertKey], out.Data[KeyKey] = cur.Data[NextCertKey], cur.Data[NextKeyKey]
		delete(out.Data, NextCertKey)
		delete(out.Data, NextKeyKey)
	case CAStepMark:
		out.ReissuedAt = now.UTC().Truncate(time.Second)
	case CAStepDrop:
		out.Data[CAKey] = w.Bundle
		out.ReissuedAt = time.Time{}
	default:
		return Stored{}, fmt.Errorf("unknown CA rotation step %d", w.Step)
	}
	return out, nil
}

// RenderLeaf is a leaf Secret's data: ca.crt is the bundle of signer (as stored at
// w.SignerVersion), byte for byte, so a renewal leaves every member's template hash as it was;
// tls.crt and tls.key are source's (w.Source, as stored at w.SourceVersion) when the leaf keeps
// a certificate, else a new certificate signed by signer's CA.
func RenderLeaf(w Write, signer Stored, source *Stored, now time.Time) (map[string][]byte, error) {
	bundle := signer.Data[CAKey]
	if w.Source != "" {
		if source == nil {
			return nil, fmt.Errorf("the certificate of Secret %s was not read", w.Source)
		}
		return map[string][]byte{CertKey: source.Data[CertKey], KeyKey: source.Data[KeyKey], CAKey: bundle}, nil
	}
	ca, err := LoadCA(signer.Data[CertKey], signer.Data[KeyKey])
	if err != nil {
		return nil, fmt.Errorf("loading the CA in Secret %s: %w", w.Signer, err)
	}
	kp, err := ca.Issue(w.Request, now)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{CertKey: kp.Cert, KeyKey: kp.Key, CAKey: bundle}, nil
}
