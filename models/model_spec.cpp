// models/model_spec.cpp — in progress
