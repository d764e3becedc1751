module github.com/pacehttp/pace

go 1.25

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
