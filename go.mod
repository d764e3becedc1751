module github.com/pacehttp/pace

go 1.25

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
