// reports/reports_placeholder.cpp — keeps the library non-empty while reports/ grows.
