// models/task_graph.cpp — in progress
