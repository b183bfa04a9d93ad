// hwprofiles/profiles.cpp — in progress
