package model

import "errors"

func loadHF(dir string) (*Model, error) { return nil, errors.New("model: hf: not yet") }
