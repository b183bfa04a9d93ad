// models/builder.cpp — in progress
