module github.com/pacehttp/pace/retryable

go 1.25

replace github.com/pacehttp/pace => ../

require (
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/pacehttp/pace v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.34.0 // indirect
	golang.org/x/text v0.21.0 // indirect
)
