"""What the tests share: servers, proxies, homes, logs and the differences they report."""
