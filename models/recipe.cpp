// models/recipe.cpp — in progress
