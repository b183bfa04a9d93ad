// models/memory_plan.cpp — in progress
